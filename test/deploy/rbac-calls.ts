/**
 * API requests as the authorizer sees them (group, resource, verb, namespace, name), and whether an RBAC rule allows
 * one: what the RBAC tests compare deploy/'s Roles and ClusterRoles with.
 */
import type { V1PolicyRule } from '@kubernetes/client-node';
import type { ResourceTable } from '../../src/dev/api-server/resources.js';
import { parseTarget } from '../../src/dev/api-server/router.js';

/** Call is one API request as the authorizer sees it. */
export interface Call {
  readonly group: string;
  /** `ingresses`, or `ingresses/status` for a subresource */
  readonly resource: string;
  readonly verb: string;
  readonly namespace: string | null;
  readonly name: string | null;
  readonly line: string;
}

/**
 * toCall maps a request to its authorization attributes; null for non-resource paths (discovery, /version, OpenAPI).
 * `table` is what the server serves (its CRDs' kinds included); the built-in kinds when absent.
 */
export function toCall(method: string, url: string, table?: ResourceTable): Call | null {
  const u = new URL(url, 'https://localhost');
  const target = parseTarget(u.pathname, table);
  if (!target) return null;
  const name =
    target.name ?? /(?:^|,)metadata\.name=([^,]+)/.exec(u.searchParams.get('fieldSelector') ?? '')?.[1] ?? null;
  const collection = target.name === undefined;
  const verb =
    method === 'GET'
      ? collection
        ? u.searchParams.get('watch') === 'true' || u.searchParams.get('watch') === '1'
          ? 'watch'
          : 'list'
        : 'get'
      : method === 'POST'
        ? 'create'
        : method === 'PUT'
          ? 'update'
          : method === 'PATCH'
            ? 'patch'
            : collection
              ? 'deletecollection'
              : 'delete';
  const resource = target.subresource ? `${target.resource.plural}/${target.subresource}` : target.resource.plural;
  return {
    group: target.resource.group,
    resource,
    verb,
    namespace: target.namespace ?? null,
    name,
    line: `${method} ${u.pathname}${u.search}`,
  };
}

/** Grant is one rule with where it applies: everywhere (ClusterRole) or in one namespace (Role). */
export interface Grant {
  readonly rule: V1PolicyRule;
  readonly namespace: string | null;
  readonly from: string;
}

export const allows = (grant: Grant, call: Call, verb = call.verb, resource = call.resource): boolean =>
  (grant.namespace === null || grant.namespace === call.namespace) &&
  (grant.rule.apiGroups ?? []).includes(call.group) &&
  (grant.rule.resources ?? []).includes(resource) &&
  grant.rule.verbs.includes(verb) &&
  (!grant.rule.resourceNames?.length ||
    (call.verb !== 'create' && call.name !== null && grant.rule.resourceNames.includes(call.name)));
