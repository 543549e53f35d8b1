/**
 * Request routing and the REST handlers: turns a path such as
 * /apis/networking.k8s.io/v1/namespaces/demo/ingresses/web/status into a resource, namespace, name
 * and subresource, then runs get, list, watch, create, update, patch, delete or deletecollection
 * on the registry and answers as kube-apiserver does (201 on create, List kinds, Tables for kubectl).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { validate, type Operation, type ServiceNetwork } from './admission.js';
import { discoveryDocument } from './discovery.js';
import { parseFieldValidation } from './fields.js';
import { acceptsJson, flag, mediaType, readBody, sendError, sendJson, wantsTable } from './http.js';
import { PATCH_TYPES, type PatchType } from './patch.js';
import { openApiDocument } from './openapi.js';
import type { KubeObject } from './objects.js';
import type { ListOptions, ListResult, Registry, WriteOptions } from './registry.js';
import { apiVersionOf, DEFAULT_TABLE, type ResourceDef, type ResourceTable } from './resources.js';
import { ApiError, badRequest, successStatus } from './status.js';
import { returnsDeletedObject } from './strategy.js';
import { toTable, type RowObject } from './table.js';
import type { Watches } from './watch.js';

/** Target is a parsed resource path. */
export interface Target {
  readonly resource: ResourceDef;
  readonly namespace?: string;
  readonly name?: string;
  readonly subresource?: string;
}

function notFoundPath(path: string): ApiError {
  return new ApiError(404, 'NotFound', `the server could not find the requested resource (path ${path})`);
}

/** parseTarget reads a REST path; undefined when the path names no resource of `table`. */
export function parseTarget(path: string, table: ResourceTable = DEFAULT_TABLE): Target | undefined {
  const segments = path.split('/').filter(Boolean).map(decodeURIComponent);
  let group: string;
  let version: string;
  let rest: string[];
  if (segments[0] === 'api' && segments.length >= 2) [group, version, rest] = ['', segments[1]!, segments.slice(2)];
  else if (segments[0] === 'apis' && segments.length >= 3)
    [group, version, rest] = [segments[1]!, segments[2]!, segments.slice(3)];
  else return undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    const resource = table.find(group, version, rest[2]!);
    // /api/v1/namespaces/x/status is the namespace's own subresource, not a resource called status.
    if (resource?.namespaced && rest.length <= 5)
      return { resource, namespace: rest[1]!, name: rest[3], subresource: rest[4] };
  }
  if (rest.length === 0 || rest.length > 3) return undefined;
  const resource = table.find(group, version, rest[0]!);
  if (!resource) return undefined;
  // A namespaced resource without a namespace is only a collection: the all-namespaces list.
  if (resource.namespaced && rest.length > 1) return undefined;
  return { resource, name: rest[1], subresource: rest[2] };
}

function listOptions(query: URLSearchParams, namespace: string | undefined): ListOptions {
  const limit = Number(query.get('limit') ?? 0);
  return {
    namespace,
    labelSelector: query.get('labelSelector'),
    fieldSelector: query.get('fieldSelector'),
    limit: Number.isInteger(limit) && limit > 0 ? limit : 0,
    continue: query.get('continue'),
    resourceVersion: query.get('resourceVersion'),
    resourceVersionMatch: query.get('resourceVersionMatch'),
  };
}

/** writeOptions reads the write parameters of a request: `fieldValidation`, `dryRun`. */
function writeOptions(query: URLSearchParams, subresource?: 'status'): WriteOptions & { warnings: string[] } {
  const options = {
    fieldValidation: parseFieldValidation(query.get('fieldValidation')),
    warnings: [] as string[],
    dryRun: query.get('dryRun') === 'All',
  };
  return subresource ? { ...options, subresource } : options;
}

/** Field validation warnings go out as `Warning: 299 - "…"` headers, which kubectl prints. */
function warningHeaders(options: { warnings: string[] }): Record<string, string[]> {
  return options.warnings.length > 0 ? { Warning: options.warnings.map((w) => `299 - ${JSON.stringify(w)}`) } : {};
}

function listMetadata(result: ListResult): Record<string, unknown> {
  const metadata: Record<string, unknown> = { resourceVersion: result.resourceVersion };
  if (result.continue) metadata.continue = result.continue;
  if (result.remainingItemCount !== undefined) metadata.remainingItemCount = result.remainingItemCount;
  return metadata;
}

/** Items of a typed List carry no apiVersion or kind on the wire; the List says it once. */
function listBody(resource: ResourceDef, result: ListResult): object {
  const items = result.items.map(({ apiVersion: _a, kind: _k, ...rest }) => rest);
  return { kind: `${resource.kind}List`, apiVersion: apiVersionOf(resource), metadata: listMetadata(result), items };
}

/**
 * Router answers every authenticated request: discovery first, then the REST paths of the registry's resource table.
 */
export class Router {
  private readonly table: ResourceTable;

  constructor(
    private readonly registry: Registry,
    private readonly watches: Watches,
    private readonly network?: ServiceNetwork,
  ) {
    this.table = registry.resources;
  }

  /**
   * admitted runs a create or update past the validating webhooks: the write runs once as a dry
   * run (every default, check and server-set field, nothing stored), the webhooks that match judge
   * that object, and only then does the write run for real (checked again, against the state of
   * that moment). Without a matching configuration it is the write alone.
   */
  private async admitted(
    target: Target,
    operation: Operation,
    before: KubeObject | undefined,
    options: WriteOptions & { warnings: string[] },
    write: (options: WriteOptions) => KubeObject,
  ): Promise<KubeObject> {
    const configurations = this.webhookConfigurations();
    if (configurations.length === 0) return write(options);
    const object = write({ ...options, warnings: [], dryRun: true });
    const namespace = object.metadata.namespace;
    const namespaceLabels = namespace
      ? (this.registry.store.get(this.table.find('', 'v1', 'namespaces')!, undefined, namespace)?.metadata.labels ?? {})
      : undefined;
    await validate(
      configurations,
      {
        resource: target.resource,
        ...(target.subresource ? { subresource: target.subresource } : {}),
        operation,
        object,
        ...(before ? { oldObject: before } : {}),
        dryRun: options.dryRun === true,
        ...(namespaceLabels ? { namespaceLabels } : {}),
      },
      options.warnings,
      this.network,
    );
    return write(options);
  }

  private webhookConfigurations(): readonly KubeObject[] {
    const resource = this.table.find('admissionregistration.k8s.io', 'v1', 'validatingwebhookconfigurations');
    return resource ? this.registry.store.list(resource) : [];
  }

  /** handle answers one request; it never throws (failures become Status responses). */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      await this.route(req, res);
    } catch (error) {
      sendError(res, error);
    }
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'https://localhost');
    const method = req.method ?? 'GET';
    if (/^\/(healthz|livez|readyz)(\/.*)?$/.test(url.pathname)) {
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('ok');
      return;
    }
    if (method === 'GET') {
      const doc =
        discoveryDocument(url.pathname, req.headers.host ?? '', this.table) ??
        openApiDocument(url.pathname, this.table);
      if (doc) return sendJson(res, 200, doc);
    }
    const target = parseTarget(url.pathname, this.table);
    if (!target) throw notFoundPath(url.pathname);
    if (!acceptsJson(req.headers.accept))
      throw new ApiError(406, 'NotAcceptable', 'only the following media types are accepted: application/json');
    if (target.subresource !== undefined && !(target.subresource === 'status' && target.resource.hasStatus))
      throw notFoundPath(url.pathname);
    const dryRun = url.searchParams.getAll('dryRun');
    if (dryRun.some((value) => value !== 'All')) throw badRequest(`unsupported dry run option: ${dryRun.join(',')}`);
    if (target.name === undefined) return this.collection(req, res, target, url.searchParams, method);
    return this.item(req, res, target as Target & { name: string }, url.searchParams, method);
  }

  private async collection(
    req: IncomingMessage,
    res: ServerResponse,
    target: Target,
    query: URLSearchParams,
    method: string,
  ): Promise<void> {
    const { resource, namespace } = target;
    const table = wantsTable(req.headers.accept);
    switch (method) {
      case 'GET': {
        if (flag(query, 'watch')) return this.watches.serve(req, res, { resource, namespace, query, table });
        const result = this.registry.list(resource, listOptions(query, namespace));
        if (!table) return sendJson(res, 200, listBody(resource, result));
        const include = (query.get('includeObject') ?? 'PartialObjectMetadata') as RowObject;
        return sendJson(res, 200, toTable(resource, result.items, { include, metadata: listMetadata(result) }));
      }
      case 'POST': {
        if (resource.namespaced && !namespace)
          throw new ApiError(
            405,
            'MethodNotAllowed',
            'the server does not allow this method on the requested resource',
          );
        const options = writeOptions(query);
        const body = await readBody(req);
        const object = await this.admitted(target, 'CREATE', undefined, options, (o) =>
          this.registry.create(resource, namespace, body, o),
        );
        return sendJson(res, 201, object, warningHeaders(options));
      }
      case 'DELETE': {
        const items = this.registry.deleteCollection(resource, listOptions(query, namespace));
        return sendJson(
          res,
          200,
          listBody(resource, { items, resourceVersion: String(this.registry.store.resourceVersion) }),
        );
      }
      default:
        throw new ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
    }
  }

  private async item(
    req: IncomingMessage,
    res: ServerResponse,
    target: Target & { name: string },
    query: URLSearchParams,
    method: string,
  ): Promise<void> {
    const { resource, namespace, name } = target;
    const subresource = target.subresource === 'status' ? 'status' : undefined;
    switch (method) {
      case 'GET': {
        const object = this.registry.get(resource, namespace, name);
        if (!wantsTable(req.headers.accept)) return sendJson(res, 200, object);
        const include = (query.get('includeObject') ?? 'PartialObjectMetadata') as RowObject;
        return sendJson(
          res,
          200,
          toTable(resource, [object], {
            include,
            metadata: { resourceVersion: object.metadata.resourceVersion ?? '' },
          }),
        );
      }
      case 'PUT': {
        const before = this.registry.store.get(resource, namespace, name);
        const options = writeOptions(query, subresource);
        const body = await readBody(req);
        const object = await this.admitted(target, before ? 'UPDATE' : 'CREATE', before, options, (o) =>
          this.registry.update(resource, namespace, name, body, o),
        );
        return sendJson(res, before ? 200 : 201, object, warningHeaders(options));
      }
      case 'PATCH': {
        const type = mediaType(req.headers['content-type']);
        if (!PATCH_TYPES.includes(type as PatchType)) {
          throw new ApiError(
            415,
            'UnsupportedMediaType',
            'the body of the request was in an ' +
              `unknown format - accepted media types include: ${PATCH_TYPES.join(', ')}`,
          );
        }
        const body = await readBody(req);
        if (body === undefined) throw badRequest('the request body is empty');
        const options = writeOptions(query, subresource);
        const before = this.registry.store.get(resource, namespace, name);
        const object = await this.admitted(target, 'UPDATE', before, options, (o) =>
          this.registry.patch(resource, namespace, name, type as PatchType, body, o),
        );
        return sendJson(res, 200, object, warningHeaders(options));
      }
      case 'DELETE': {
        if (subresource)
          throw new ApiError(
            405,
            'MethodNotAllowed',
            'the server does not allow this method on the requested resource',
          );
        const body = ((await readBody(req)) ?? {}) as {
          preconditions?: { uid?: string; resourceVersion?: string };
          dryRun?: string[];
        };
        const options: WriteOptions = { dryRun: query.get('dryRun') === 'All' || (body.dryRun ?? []).includes('All') };
        if (body.preconditions) options.preconditions = body.preconditions;
        const result = this.registry.delete(resource, namespace, name, options);
        if (!result.deleted || returnsDeletedObject(resource)) return sendJson(res, 200, result.object);
        return sendJson(res, 200, successStatus(resource, name, result.object.metadata.uid));
      }
      default:
        throw new ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
    }
  }
}
