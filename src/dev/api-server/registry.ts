/**
 * The API semantics over the store, as kube-apiserver's generic registry has them: server-set
 * metadata (uid, creationTimestamp, generation, resourceVersion), optimistic concurrency, status
 * subresources, finalizers, namespace lifecycle, list paging, and the kind strategies of
 * strategy.ts. Synchronous, so tests can change state between two network events on purpose.
 */
import { randomUUID } from 'node:crypto';
import { CRD_CLEANUP_FINALIZER, establish } from './crd.js';
import { checkFields, reportUnknown, type FieldValidation } from './fields.js';
import { applyPatch, type PatchType } from './patch.js';
import { apiVersionOf, builtinKind, RESOURCES, ResourceTable, type ResourceDef } from './resources.js';
import { pruneUnknown } from './schema.js';
import { parseFieldSelector, parseLabelSelector } from './selectors.js';
import { alreadyExists, ApiError, badRequest, conflict, gone, invalid, notFound } from './status.js';
import { Store } from './store.js';
import type { KubeObject } from './objects.js';
import {
  admitCreate,
  Allocator,
  allowsCreateOnUpdate,
  defaultObject,
  isCrd,
  prepareForCreate,
  tracksGeneration,
  validate,
  type StrategyContext,
} from './strategy.js';

/** ListOptions are the query parameters of a list (and of the initial state of a watch). */
export interface ListOptions {
  namespace?: string;
  labelSelector?: string | null;
  fieldSelector?: string | null;
  limit?: number;
  continue?: string | null;
  resourceVersion?: string | null;
  resourceVersionMatch?: string | null;
}

/** ListResult is a page of a list, with the metadata a List object carries. */
export interface ListResult {
  items: KubeObject[];
  resourceVersion: string;
  continue?: string;
  remainingItemCount?: number;
}

/** WriteOptions choose the subresource a write goes to and carry DeleteOptions preconditions. */
export interface WriteOptions {
  subresource?: 'status';
  preconditions?: { uid?: string; resourceVersion?: string };
  /** What to do with unknown fields (default Warn); Warn's messages are pushed onto `warnings`. */
  fieldValidation?: FieldValidation;
  warnings?: string[];
  /** `dryRun=All`: run every step (defaults, admission, validation, conflicts) but store nothing. */
  dryRun?: boolean;
}

/** Manifest is an object as read from YAML: its shape is checked when it is applied. */
export interface Manifest {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata?: { readonly name?: string; readonly namespace?: string };
}

/** DeleteResult is the outcome of a delete: gone for good, or only marked (finalizers, a Terminating namespace). */
export interface DeleteResult {
  object: KubeObject;
  deleted: boolean;
}

const NAMESPACES = RESOURCES.find((r) => r.kind === 'Namespace')!;
const INGRESS_CLASSES = RESOURCES.find((r) => r.kind === 'IngressClass')!;
const CRDS = RESOURCES.find(isCrd)!;

/** The namespaces every cluster starts with. */
const SYSTEM_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

function timestamp(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** canonical is JSON with sorted keys, so key order (which clients choose) never counts as a change. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * Everything outside metadata and status: what a generation counts changes of. A custom resource
 * without a status subresource counts its status too, as kube-apiserver does.
 */
function specPart(resource: ResourceDef, object: KubeObject): string {
  const { metadata: _m, status, ...rest } = object;
  return canonical(resource.crd && !resource.hasStatus ? { ...rest, status } : rest);
}

function encodeContinue(resourceVersion: number, after: string): string {
  return Buffer.from(JSON.stringify({ rv: resourceVersion, start: after })).toString('base64url');
}

function decodeContinue(token: string): { rv: number; start: string } {
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { rv: unknown; start: unknown };
    if (typeof parsed.rv === 'number' && typeof parsed.start === 'string')
      return { rv: parsed.rv, start: parsed.start };
  } catch {
    // fall through to the 400 below
  }
  throw badRequest('continue key is not valid: invalid continue token');
}

/** RegistryOptions tune the registry; the defaults suit tests and the demo. */
export interface RegistryOptions {
  /** The clock for creationTimestamp and deletionTimestamp. */
  now?: () => Date;
  /**
   * How long a deleted namespace stays Terminating before its objects and then itself are gone
   * (default 500 ms): long enough that `kubectl delete -f` can still delete what a file lists after it.
   */
  namespaceDeletionDelayMs?: number;
  /** What is served (default: RESOURCES only, and the CRDs created); the router and discovery read the same table. */
  resources?: ResourceTable;
}

/**
 * Registry is the server's object API: the HTTP handlers call it, and so may tests and the demo
 * (through `server.registry`) to change the cluster without a client.
 */
export class Registry {
  private readonly context: StrategyContext;
  private readonly now: () => Date;
  private readonly namespaceDeletionDelayMs: number;
  /** The kinds this registry serves: RESOURCES, the server's extra kinds, and each established CRD's versions. */
  readonly resources: ResourceTable;

  constructor(
    readonly store: Store = new Store(),
    options: RegistryOptions = {},
  ) {
    this.now = options.now ?? (() => new Date());
    this.namespaceDeletionDelayMs = options.namespaceDeletionDelayMs ?? 500;
    this.resources = options.resources ?? new ResourceTable();
    this.context = { ingressClasses: () => this.store.list(INGRESS_CLASSES), allocator: new Allocator() };
    for (const name of SYSTEM_NAMESPACES)
      this.create(NAMESPACES, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  }

  private scope(resource: ResourceDef, namespace: string | undefined): string | undefined {
    if (!resource.namespaced) return undefined;
    if (!namespace) throw badRequest('an empty namespace may not be set during creation');
    return namespace;
  }

  /** get returns one object or throws 404. */
  get(resource: ResourceDef, namespace: string | undefined, name: string): KubeObject {
    const found = this.store.get(resource, resource.namespaced ? namespace : undefined, name);
    if (!found) throw notFound(resource, name);
    return found;
  }

  /** list returns the matching objects, paged by `limit`/`continue`, and the list's resourceVersion. */
  list(resource: ResourceDef, options: ListOptions = {}): ListResult {
    const labels = parseLabelSelector(options.labelSelector);
    const fields = parseFieldSelector(options.fieldSelector, builtinKind(resource));
    const current = this.store.resourceVersion;
    const requested = options.resourceVersion ? Number(options.resourceVersion) : undefined;
    if (options.resourceVersion && !Number.isInteger(requested))
      throw badRequest(`invalid resource version: ${options.resourceVersion}`);
    // Only the newest state is kept: an Exact read of a compacted version is 410, as from etcd.
    if (
      options.resourceVersionMatch === 'Exact' &&
      requested !== undefined &&
      requested < this.store.oldestResourceVersion
    ) {
      throw gone(`The resourceVersion for the provided list is too old.`);
    }
    let after: string | undefined;
    if (options.continue) {
      const token = decodeContinue(options.continue);
      if (token.rv < this.store.oldestResourceVersion) {
        throw gone(
          'The provided continue parameter is too old to display a consistent list result. You can start a new list ' +
            'without the continue parameter.',
        );
      }
      after = token.start;
    }
    const namespace = resource.namespaced ? options.namespace : undefined;
    const keyOf = (o: KubeObject): string =>
      o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;
    let items = this.store.list(resource, namespace).filter((o) => labels(o) && fields(o));
    if (after !== undefined) items = items.filter((o) => keyOf(o) > after);
    const result: ListResult = { items, resourceVersion: String(current) };
    if (options.limit && options.limit > 0 && items.length > options.limit) {
      result.items = items.slice(0, options.limit);
      result.continue = encodeContinue(current, keyOf(result.items[result.items.length - 1]!));
      result.remainingItemCount = items.length - options.limit;
    }
    return result;
  }

  private checkKind(resource: ResourceDef, body: KubeObject): void {
    const apiVersion = apiVersionOf(resource);
    if (body.apiVersion !== undefined && body.apiVersion !== apiVersion) {
      throw badRequest(
        `the API version in the data (${body.apiVersion}) does not match the expected API version (${apiVersion})`,
      );
    }
    if (body.kind !== undefined && body.kind !== resource.kind)
      throw badRequest(`the kind in the data (${body.kind}) does not match the expected kind (${resource.kind})`);
    body.apiVersion = apiVersion;
    body.kind = resource.kind;
  }

  private normalize(
    resource: ResourceDef,
    namespace: string | undefined,
    body: unknown,
    options: WriteOptions,
  ): KubeObject {
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw badRequest('the body of the request is not a JSON object');
    const object = structuredClone(body) as KubeObject;
    if (typeof object.metadata !== 'object' || object.metadata === null) object.metadata = { name: '' };
    this.checkKind(resource, object);
    const mode = options.fieldValidation ?? 'Warn';
    options.warnings?.push(
      ...(resource.crd
        ? reportUnknown(resource.kind, apiVersionOf(resource), pruneUnknown(object, resource.crd.schema), mode)
        : checkFields(resource, object, mode)),
    );
    const ns = this.scope(resource, namespace);
    if (ns !== undefined) {
      if (object.metadata.namespace && object.metadata.namespace !== ns) {
        throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
      }
      object.metadata.namespace = ns;
    } else {
      delete object.metadata.namespace;
    }
    return object;
  }

  private validated(resource: ResourceDef, object: KubeObject): void {
    const causes = validate(resource, object);
    if (causes.length > 0) throw invalid(resource, object.metadata.name, causes);
  }

  /** create stores a new object: POST. Throws 409 AlreadyExists, 404 for a missing namespace, 422. */
  create(resource: ResourceDef, namespace: string | undefined, body: unknown, options: WriteOptions = {}): KubeObject {
    const object = this.normalize(resource, namespace, body, options);
    const meta = object.metadata;
    if (!meta.name && meta.generateName)
      meta.name = `${meta.generateName}${randomUUID().replace(/-/g, '').slice(0, 5)}`;
    if (!meta.name)
      throw invalid(resource, '', [
        {
          reason: 'FieldValueRequired',
          field: 'metadata.name',
          message: 'Required value: name or generateName is required',
        },
      ]);
    if (meta.namespace) this.checkNamespaceOpen(meta.namespace);
    if (this.store.get(resource, meta.namespace, meta.name)) throw alreadyExists(resource, meta.name);
    prepareForCreate(resource, object);
    defaultObject(resource, object, this.context);
    admitCreate(resource, object, this.context);
    this.validated(resource, object);
    meta.uid = randomUUID();
    meta.creationTimestamp = timestamp(this.now());
    if (tracksGeneration(resource)) meta.generation = 1;
    else delete meta.generation;
    delete meta.resourceVersion;
    delete meta.deletionTimestamp;
    delete meta.managedFields;
    let served: ResourceDef[] | undefined;
    if (resource === CRDS) {
      if (!(meta.finalizers ?? []).includes(CRD_CLEANUP_FINALIZER))
        meta.finalizers = [...(meta.finalizers ?? []), CRD_CLEANUP_FINALIZER];
      served = this.establish(object);
    }
    if (options.dryRun) return object;
    const stored = this.store.put(resource, object);
    if (served) this.resources.replaceCustom(meta.name, served);
    return stored;
  }

  /** establish sets a CRD's status and gives the definitions of its served versions (crd.ts). */
  private establish(crd: KubeObject): ResourceDef[] {
    return establish(crd, this.resources, timestamp(this.now()));
  }

  /**
   * serveCustom serves a stored CRD's versions: the table changes (and the CRD's watches end) only
   * when what is served changed, not for a new label or annotation.
   */
  private serveCustom(name: string, served: ResourceDef[]): void {
    const key = (defs: readonly ResourceDef[]): string => JSON.stringify(defs);
    if (key(this.resources.resources.filter((r) => r.crd?.name === name)) === key(served)) return;
    this.resources.replaceCustom(name, served);
  }

  /** removeCustom deletes every object of a CRD, then stops serving it: a CRD's deletion. */
  private removeCustom(name: string): void {
    const served = this.resources.resources.filter((r) => r.crd?.name === name);
    const any = served[0];
    if (any) {
      for (const object of this.store.list(any))
        this.store.remove(any, object.metadata.namespace, object.metadata.name);
      this.store.drop(any);
    }
    this.resources.replaceCustom(name, []);
  }

  /** update replaces an object: PUT, on the object or its /status. Throws 404, 409 Conflict, 422. */
  update(
    resource: ResourceDef,
    namespace: string | undefined,
    name: string,
    body: unknown,
    options: WriteOptions = {},
  ): KubeObject {
    const incoming = this.normalize(resource, namespace, body, options);
    if (incoming.metadata.name && incoming.metadata.name !== name) {
      throw badRequest(
        `the name of the object (${incoming.metadata.name}) does not match the name on the URL (${name})`,
      );
    }
    incoming.metadata.name = name;
    const old = this.store.get(resource, resource.namespaced ? namespace : undefined, name);
    if (!old) {
      if (options.subresource || !allowsCreateOnUpdate(resource)) throw notFound(resource, name);
      return this.create(resource, namespace, incoming, options);
    }
    const rv = incoming.metadata.resourceVersion;
    if (rv !== undefined && rv !== '' && rv !== old.metadata.resourceVersion) throw conflict(resource, name);
    return this.write(resource, old, incoming, options);
  }

  /** patch applies a merge, JSON or strategic merge patch to the current object: PATCH. */
  patch(
    resource: ResourceDef,
    namespace: string | undefined,
    name: string,
    type: PatchType,
    patch: unknown,
    options: WriteOptions = {},
  ): KubeObject {
    if (resource.crd && type === 'application/strategic-merge-patch+json')
      throw new ApiError(
        415,
        'UnsupportedMediaType',
        'the body of the request was in an unknown format - accepted media types include: ' +
          'application/json-patch+json, application/merge-patch+json',
      );
    const old = this.get(resource, namespace, name);
    const patched = applyPatch(type, old, patch, resource.kind) as KubeObject;
    if (typeof patched !== 'object' || patched === null || Array.isArray(patched))
      throw new ApiError(422, 'Invalid', 'the patched object is not a JSON object');
    const incoming = this.normalize(resource, namespace, patched, options);
    if (incoming.metadata.name !== name)
      throw badRequest(
        `the name of the object (${incoming.metadata.name}) does not match the name on the URL (${name})`,
      );
    if (incoming.metadata.resourceVersion !== old.metadata.resourceVersion) throw conflict(resource, name);
    return this.write(resource, old, incoming, options);
  }

  /** write finishes an update: keeps what clients can't change, then stores it unless nothing changed. */
  private write(resource: ResourceDef, old: KubeObject, incoming: KubeObject, options: WriteOptions): KubeObject {
    let next: KubeObject;
    if (options.subresource === 'status') {
      // A /status write changes status only; everything else stays as stored.
      next = { ...structuredClone(old), status: incoming.status };
      if (incoming.status === undefined) delete next.status;
    } else {
      next = incoming;
      if (resource.hasStatus) {
        if (old.status === undefined) delete next.status;
        else next.status = structuredClone(old.status);
      }
    }
    const meta = next.metadata;
    for (const key of [
      'uid',
      'creationTimestamp',
      'deletionTimestamp',
      'deletionGracePeriodSeconds',
      'generation',
    ] as const) {
      if (old.metadata[key] === undefined) delete meta[key];
      else (meta as Record<string, unknown>)[key] = old.metadata[key];
    }
    delete meta.managedFields;
    meta.resourceVersion = old.metadata.resourceVersion;
    defaultObject(resource, next, this.context, old);
    this.validated(resource, next);
    if (tracksGeneration(resource) && specPart(resource, next) !== specPart(resource, old))
      meta.generation = (old.metadata.generation ?? 0) + 1;
    const served = resource === CRDS && !meta.deletionTimestamp ? this.establish(next) : undefined;
    // A write that changes nothing is not stored: no new resourceVersion, no watch event.
    if (canonical(next) === canonical(old)) return old;
    if (options.dryRun) return next;
    // The last finalizer of an object being deleted is gone: now it really goes.
    if (meta.deletionTimestamp && (meta.finalizers ?? []).length === 0) {
      return this.store.remove(resource, meta.namespace, meta.name) ?? old;
    }
    const stored = this.store.put(resource, next);
    if (served) this.serveCustom(meta.name, served);
    return stored;
  }

  /** delete removes an object, or marks it with a deletionTimestamp while it has finalizers. */
  delete(resource: ResourceDef, namespace: string | undefined, name: string, options: WriteOptions = {}): DeleteResult {
    const old = this.get(resource, namespace, name);
    const pre = options.preconditions;
    if (pre?.uid && pre.uid !== old.metadata.uid) {
      throw new ApiError(
        409,
        'Conflict',
        `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${old.metadata.uid}`,
      );
    }
    if (pre?.resourceVersion && pre.resourceVersion !== old.metadata.resourceVersion) {
      throw new ApiError(
        409,
        'Conflict',
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}` +
          `, ResourceVersion in meta: ${old.metadata.resourceVersion}`,
      );
    }
    if (old.metadata.deletionTimestamp) return { object: old, deleted: false };
    if (options.dryRun)
      return { object: old, deleted: (old.metadata.finalizers ?? []).length === 0 && resource !== NAMESPACES };
    if (resource === NAMESPACES) return { object: this.terminate(old), deleted: false };
    if (resource === CRDS) return { object: this.deleteCrd(old), deleted: false };
    if ((old.metadata.finalizers ?? []).length > 0)
      return { object: this.store.put(resource, this.markDeleted(old)), deleted: false };
    return { object: this.store.remove(resource, old.metadata.namespace, name) ?? old, deleted: true };
  }

  /**
   * deleteCrd does at once what the CRD finalizer's controller does: the objects go (their watchers
   * see DELETED), then the kind leaves discovery and the REST paths, then the CRD goes unless other
   * finalizers keep it. Returns the CRD as marked for deletion, as kube-apiserver answers.
   */
  private deleteCrd(crd: KubeObject): KubeObject {
    const marked = this.markDeleted(crd);
    const name = crd.metadata.name;
    this.removeCustom(name);
    const rest = (marked.metadata.finalizers ?? []).filter((f) => f !== CRD_CLEANUP_FINALIZER);
    if (rest.length > 0) {
      marked.metadata.finalizers = rest;
      return this.store.put(CRDS, marked);
    }
    this.store.remove(CRDS, undefined, name);
    return marked;
  }

  private markDeleted(object: KubeObject): KubeObject {
    const marked = structuredClone(object);
    marked.metadata.deletionTimestamp = timestamp(this.now());
    marked.metadata.deletionGracePeriodSeconds = 0;
    return marked;
  }

  /** NamespaceLifecycle admission: no new objects in a missing or terminating namespace. */
  private checkNamespaceOpen(namespace: string): void {
    const found = this.store.get(NAMESPACES, undefined, namespace);
    if (!found) throw notFound(NAMESPACES, namespace);
    if (found.metadata.deletionTimestamp) {
      throw new ApiError(
        403,
        'Forbidden',
        `${namespace}: forbidden: unable to create new content in ` +
          `namespace ${namespace} because it is being terminated`,
        {
          name: namespace,
          kind: 'namespaces',
        },
      );
    }
  }

  /**
   * A deleted namespace turns Terminating; soon after, what the namespace controller does
   * happens: its objects are deleted, then the namespace itself.
   */
  private terminate(namespace: KubeObject): KubeObject {
    const marked = this.markDeleted(namespace);
    (marked as { status?: Record<string, unknown> }).status = { phase: 'Terminating' };
    const stored = this.store.put(NAMESPACES, marked);
    const name = namespace.metadata.name;
    setTimeout(() => {
      for (const resource of this.resources.resources) {
        if (!resource.namespaced) continue;
        for (const object of this.store.list(resource, name)) this.store.remove(resource, name, object.metadata.name);
      }
      this.store.remove(NAMESPACES, undefined, name);
    }, this.namespaceDeletionDelayMs).unref();
    return stored;
  }

  /** deleteCollection deletes every object a list with these options would return. */
  deleteCollection(resource: ResourceDef, options: ListOptions): KubeObject[] {
    const { items } = this.list(resource, { ...options, limit: 0, continue: null });
    return items.map((item) => this.delete(resource, item.metadata.namespace, item.metadata.name).object);
  }

  /**
   * apply creates or replaces an object from a manifest (apiVersion and kind pick the resource),
   * for seeding and tests. Its namespace is created first when missing, for convenience.
   */
  apply(manifest: Manifest): KubeObject {
    const resource = this.resources.findByKind(String(manifest.apiVersion), String(manifest.kind));
    if (!resource)
      throw badRequest(`no resource is served for ${String(manifest.apiVersion)} ${String(manifest.kind)}`);
    const name = manifest.metadata?.name ?? '';
    const namespace = resource.namespaced ? (manifest.metadata?.namespace ?? 'default') : undefined;
    if (namespace && !this.store.get(NAMESPACES, undefined, namespace)) {
      this.create(NAMESPACES, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
    }
    // Seeds are checked strictly: a typo in an example should fail loudly, not vanish.
    if (!this.store.get(resource, namespace, name))
      return this.create(resource, namespace, manifest, { fieldValidation: 'Strict' });
    const body = structuredClone(manifest) as KubeObject;
    delete body.metadata.resourceVersion;
    return this.update(resource, namespace, name, body, { fieldValidation: 'Strict' });
  }
}
