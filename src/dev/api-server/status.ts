/**
 * Failures as the real API server reports them: a `Status` object whose `reason` and `code` clients
 * branch on (client-node's informer looks for 410, kubectl apply for 404 and 409), and whose
 * `message` reads the same as kube-apiserver's so logs and test output look familiar.
 */
import type { ResourceDef } from './resources.js';

/** StatusCause is one entry of `details.causes` (used for 422 Invalid). */
export interface StatusCause {
  readonly reason: string;
  readonly message: string;
  readonly field?: string;
}

/** StatusObject is the wire form of a meta/v1 Status. */
export interface StatusObject {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Success' | 'Failure';
  message?: string;
  reason?: string;
  details?: { name?: string; group?: string; kind?: string; uid?: string; causes?: StatusCause[] };
  code: number;
}

/** ApiError is a failure to answer with a Status: thrown anywhere in the server, turned into JSON once. */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: StatusObject['details'],
  ) {
    super(message);
  }

  /** toStatus renders the error as the Status body the real server sends. */
  toStatus(): StatusObject {
    const status: StatusObject = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      code: this.code,
    };
    if (this.details) status.details = this.details;
    return status;
  }
}

/** qualifiedName is how kube-apiserver names a resource in messages: `ingresses.networking.k8s.io`. */
export function qualifiedName(resource: ResourceDef): string {
  return resource.group === '' ? resource.plural : `${resource.plural}.${resource.group}`;
}

function details(resource: ResourceDef, name: string): StatusObject['details'] {
  return { name, group: resource.group, kind: resource.plural };
}

/** notFound is the 404 for a missing object. */
export function notFound(resource: ResourceDef, name: string): ApiError {
  return new ApiError(404, 'NotFound', `${qualifiedName(resource)} "${name}" not found`, details(resource, name));
}

/** alreadyExists is the 409 for a create whose name is taken. */
export function alreadyExists(resource: ResourceDef, name: string): ApiError {
  return new ApiError(
    409,
    'AlreadyExists',
    `${qualifiedName(resource)} "${name}" already exists`,
    details(resource, name),
  );
}

/** conflict is the 409 for a write carrying a stale resourceVersion. */
export function conflict(resource: ResourceDef, name: string): ApiError {
  return new ApiError(
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${qualifiedName(resource)} "${name}": the object has been modified; please ` +
      'apply your changes to the latest version and try again',
    details(resource, name),
  );
}

/** invalid is the 422 for an object that fails validation, one cause per bad field. */
export function invalid(resource: ResourceDef, name: string, causes: StatusCause[]): ApiError {
  const group = resource.group === '' ? '' : `.${resource.group}`;
  const summary = causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message)).join(', ');
  return new ApiError(422, 'Invalid', `${resource.kind}${group} "${name}" is invalid: ${summary}`, {
    name,
    group: resource.group,
    kind: resource.kind,
    causes: [...causes],
  });
}

/** badRequest is the 400 for a request the server cannot make sense of. */
export function badRequest(message: string): ApiError {
  return new ApiError(400, 'BadRequest', message);
}

/** gone is the 410 Expired for a resourceVersion older than the history window. */
export function gone(message: string): ApiError {
  return new ApiError(410, 'Expired', message);
}

/** successStatus is the body of a successful delete of something that has no object to return. */
export function successStatus(resource: ResourceDef, name: string, uid?: string): StatusObject {
  const d: NonNullable<StatusObject['details']> = { name, group: resource.group, kind: resource.plural };
  if (uid) d.uid = uid;
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: d, code: 200 };
}
