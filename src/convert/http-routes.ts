/**
 * The HTTPRoutes of one IngressClass: one per Ingress and host on the HTTPS listener of a TLS host (or on the HTTP
 * listener), and one more on the HTTP listener where ingress-nginx redirects to HTTPS; split in parts past the CRD's
 * rule limit.
 */
import { GATEWAY_GROUP } from '../model/gateway/types.js';
import type { KubeObject } from '../model/snapshot.js';
import { HTTPS_REDIRECT_CODE, TRAILING_SLASH } from './annotations.js';
import { CATCH_ALL, type Draft, type Json, type Report, type Rule } from './draft.js';
import type { ClassGateway } from './gateway.js';
import { objectName } from './object-name.js';

/** MAX_RULES is the CRD's maxItems for an HTTPRoute's rules. */
const MAX_RULES = 16;

/** ruleJson is a drafted rule as HTTPRoute rules: those a canary header adds first, then its own. */
function ruleJson(rule: Rule): Json[] {
  const own: Json = {
    matches: [rule.match],
    ...(rule.filters.length > 0 ? { filters: rule.filters } : {}),
    ...(rule.backends.length > 0
      ? {
          backendRefs: rule.backends.map((b) => ({
            name: b.name,
            port: b.port,
            ...(b.weight === undefined ? {} : { weight: b.weight }),
          })),
        }
      : {}),
    ...(rule.timeout !== null && rule.backends.length > 0 ? { timeouts: { backendRequest: rule.timeout } } : {}),
  };
  return [...rule.extra.flatMap(ruleJson), own];
}

/** routeName names an Ingress's route for one host. */
function routeName(ingress: string, host: string, several: boolean): string {
  if (!several) return ingress;
  return objectName(ingress, host === CATCH_ALL ? 'catch-all' : host.replace('*', 'wildcard'));
}

/**
 * classRoutes are the HTTPRoutes of a class's drafts, attached to its Gateway; `drafts` (every class's) tell whether
 * an Ingress has several hosts, so that its routes need the host in their names.
 */
export function classRoutes(
  gw: ClassGateway,
  classDrafts: readonly Draft[],
  drafts: readonly Draft[],
  report: Report,
): KubeObject[] {
  const routes: KubeObject[] = [];
  const parentRef = (sectionName: string, routeNs: string): Json => ({
    name: gw.name,
    ...(routeNs === gw.namespace ? {} : { namespace: gw.namespace }),
    sectionName,
  });
  const trailingReported = new Set<string>();
  for (const d of classDrafts) {
    const id = d.ingress;
    const several = new Set(drafts.filter((x) => x.ingress === id).map((x) => x.host)).size > 1;
    const name = routeName(id.name, d.host, several);
    const section = d.host === CATCH_ALL ? undefined : gw.sections.get(d.host);
    // a passed-through host named in spec.tls is a TLS host to ingress-nginx: its plain HTTP is redirected too
    const tlsHost = section !== undefined || gw.passthroughTls.has(d.host);
    const redirect = id.settings.forceSslRedirect || (tlsHost && id.settings.sslRedirect !== false);
    const rules = d.rules.flatMap(ruleJson);
    const hostnames = d.host === CATCH_ALL ? {} : { hostnames: [d.host] };
    const parents = [
      ...(section === undefined ? [] : [parentRef(section, id.namespace)]),
      ...(redirect ? [] : [parentRef('http', id.namespace)]),
    ];
    if (parents.length > 0) routes.push(...split(name, id.namespace, { parentRefs: parents, ...hostnames }, rules));
    if (redirect) {
      const redirects = d.rules.map((r) => ({
        matches: [r.match],
        filters: [{ type: 'RequestRedirect', requestRedirect: { scheme: 'https', statusCode: HTTPS_REDIRECT_CODE } }],
      }));
      routes.push(
        ...split(
          objectName(name, 'https-redirect'),
          id.namespace,
          { parentRefs: [parentRef('http', id.namespace)], ...hostnames },
          redirects,
        ),
      );
      if (!id.settings.preserveTrailingSlash && !trailingReported.has(id.owner)) {
        trailingReported.add(id.owner);
        const key = id.settings.forceSslRedirect
          ? 'force-ssl-redirect'
          : id.settings.sslRedirect
            ? 'ssl-redirect'
            : null;
        report(
          id.owner,
          key === null ? 'spec.tls' : `metadata.annotations.nginx.ingress.kubernetes.io/${key}`,
          `${key === null ? 'the HTTPS redirect of a TLS host (ssl-redirect is on by default): ' : ''}${TRAILING_SLASH}`,
        );
      }
    }
  }
  return routes;
}

/**
 * split makes one HTTPRoute of the rules, or several (`name`, `name-2`, …) when they are more than one route holds:
 * precedence is the same across routes of one hostname, so the split changes nothing served.
 */
function split(name: string, namespace: string, spec: Json, rules: readonly Json[]): KubeObject[] {
  const routes: KubeObject[] = [];
  for (let i = 0; i < rules.length; i += MAX_RULES) {
    const part = i === 0 ? name : objectName(name, String(i / MAX_RULES + 1));
    routes.push(route(part, namespace, { ...spec, rules: rules.slice(i, i + MAX_RULES) }));
  }
  return routes;
}

function route(name: string, namespace: string, spec: Json): KubeObject {
  return { apiVersion: `${GATEWAY_GROUP}/v1`, kind: 'HTTPRoute', metadata: { name, namespace }, spec } as KubeObject;
}
