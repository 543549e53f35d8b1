/**
 * ssl-passthrough in Gateway API terms: a host whose owner (the oldest Ingress naming it, as the controller settles a
 * host, src/model/host-rules.ts) asks for it gets a TLS listener in Passthrough mode on 443 and a TLSRoute to the
 * backend of the owner's own `/` path, as the controller sends such a host's TLS streams (src/model/stream.ts
 * passthroughHosts). A newer Ingress cannot flip a host it does not own, and a host without the owner's `/` keeps
 * nginx's TLS: both reported, as the controller reports them.
 */
import { ANNOTATION_PREFIX } from '../model/annotations/types.js';
import { GATEWAY_GROUP } from '../model/gateway/types.js';
import type { KubeObject } from '../model/snapshot.js';
import { checkHost } from '../model/validate.js';
import { type Backend, CATCH_ALL, type Ident, type Json, type Report } from './draft.js';
import { PASSTHROUGH_DIFFERENCE } from './annotations.js';
import { hostOwners } from './frontend-tls.js';
import { objectName } from './object-name.js';
import type { IngressReader } from './read-ingress.js';

/** PassthroughHost is one host whose TLS streams go to its backend undecrypted. */
export interface PassthroughHost {
  readonly host: string;
  /** the Ingress that owns the host and asked for it */
  readonly owner: Ident;
  readonly backend: Backend;
}

const ANNOTATION = `metadata.annotations.${ANNOTATION_PREFIX}ssl-passthrough`;

/** rootBackend is an Ingress's backend for the path `/` of a host (a Prefix or ImplementationSpecific `/`). */
function rootBackend(reader: IngressReader, id: Ident, host: string): Backend | null {
  const spec = id.ingress.spec ?? {};
  for (const [i, rule] of (spec.rules ?? []).entries()) {
    if ((rule.host ?? CATCH_ALL) !== host) continue;
    for (const [j, p] of (rule.http?.paths ?? []).entries())
      if (p.path === '/' && p.pathType !== 'Exact' && !p.backend?.resource)
        return reader.backend(id, p.backend, `spec.rules[${i}].http.paths[${j}].backend`);
  }
  // the default backend serves a host's `/` where no path of its own is `/`
  if (spec.defaultBackend?.service) return reader.backend(id, spec.defaultBackend, 'spec.defaultBackend');
  return null;
}

/** passthroughHosts finds the hosts to pass through among a class's main Ingresses (oldest first). */
export function passthroughHosts(
  members: readonly Ident[],
  reader: IngressReader,
  report: Report,
): Map<string, PassthroughHost> {
  const owners = hostOwners(members);
  const hosts = new Map<string, PassthroughHost>();
  for (const m of members.filter((x) => x.settings.sslPassthrough)) {
    let converted = false;
    for (const [i, rule] of (m.ingress.spec?.rules ?? []).entries()) {
      const checked = rule.host ? checkHost(rule.host) : null;
      if (checked === null) {
        report(m.owner, `spec.rules[${i}].host`, 'ssl-passthrough needs a host (TLS clients name it in SNI); ignored');
        continue;
      }
      if (!checked.ok || hosts.has(checked.value)) continue;
      const host = checked.value;
      const owner = owners.get(host)!;
      if (owner !== m) {
        if (!owner.settings.sslPassthrough)
          report(
            m.owner,
            ANNOTATION,
            `host ${host} is owned by Ingress ${owner.owner} (the oldest naming it), which does not ask for it; ` +
              'ignored, as the controller ignores it',
          );
        continue;
      }
      const backend = rootBackend(reader, m, host);
      if (backend === null) {
        report(m.owner, `spec.rules[${i}]`, `ssl-passthrough: host ${host} has no backend for the path /; ignored`);
        continue;
      }
      hosts.set(host, { host, owner: m, backend });
      converted = true;
    }
    if (converted) report(m.owner, ANNOTATION, `converted to a TLSRoute: ${PASSTHROUGH_DIFFERENCE}`);
  }
  return hosts;
}

/** tlsListenerName names a passthrough host's listener: `tls-` and the host's labels, or its index when too long. */
export function tlsListenerName(host: string, index: number): string {
  const name = `tls-${host.replace('*', 'wildcard').replaceAll('.', '-')}`;
  return name.length <= 63 ? name : `tls-${index}`;
}

/** passthroughListener is the Gateway's TLS listener of one passed-through host. */
export function passthroughListener(host: string, section: string, allowedRoutes: Json): Json {
  return { name: section, protocol: 'TLS', port: 443, hostname: host, tls: { mode: 'Passthrough' }, allowedRoutes };
}

/** passthroughRoute is the TLSRoute of one host: its SNI name to the owner's `/` backend. */
export function passthroughRoute(
  gateway: { readonly name: string; readonly namespace: string },
  section: string,
  p: PassthroughHost,
  several: boolean,
): KubeObject {
  const name = several
    ? objectName(p.owner.name, `${p.host.replace('*', 'wildcard')}-tls`)
    : objectName(p.owner.name, 'tls');
  return {
    apiVersion: `${GATEWAY_GROUP}/v1`,
    kind: 'TLSRoute',
    metadata: { name, namespace: p.owner.namespace },
    spec: {
      parentRefs: [
        {
          name: gateway.name,
          ...(p.owner.namespace === gateway.namespace ? {} : { namespace: gateway.namespace }),
          sectionName: section,
        },
      ],
      hostnames: [p.host],
      rules: [{ backendRefs: [{ name: p.backend.name, port: p.backend.port }] }],
    },
  } as KubeObject;
}
