/**
 * The Gateway of one IngressClass: an HTTP listener on 80, an HTTPS listener on 443 per TLS host (the certificate the
 * oldest Ingress naming the host gives, as ingress-nginx settles it), and the ReferenceGrants its Secrets in other
 * namespaces need.
 */
import { compare } from '../model/backends.js';
import { GATEWAY_GROUP } from '../model/gateway/types.js';
import type { KubeObject } from '../model/snapshot.js';
import { checkHost, checkObjectName, show } from '../model/validate.js';
import type { Ident, Json, Report } from './draft.js';
import { objectName } from './object-name.js';
import { passthroughListener, tlsListenerName } from './passthrough.js';

/** Tls is the certificate of one HTTPS host: a Secret in the namespace of the Ingress that names it. */
export interface Tls {
  readonly namespace: string;
  readonly secretName: string;
}

/** ClassGateway is where one IngressClass's routes attach: the Gateway, and its HTTPS listener for each TLS host. */
export interface ClassGateway {
  readonly name: string;
  readonly namespace: string;
  /** TLS host → its certificate */
  readonly tls: ReadonlyMap<string, Tls>;
  /** TLS host → the name of its HTTPS listener */
  readonly sections: ReadonlyMap<string, string>;
  /** passed-through host → the name of its TLS listener (Passthrough) */
  readonly passthroughSections: ReadonlyMap<string, string>;
  /** passed-through hosts the Ingresses name in spec.tls: plain HTTP there redirects to HTTPS as for a TLS host */
  readonly passthroughTls: ReadonlySet<string>;
}

/** listenerName names a host's HTTPS listener: `https-` and the host's labels, or its index when that is too long. */
function listenerName(host: string, index: number): string {
  const name = `https-${host.replace('*', 'wildcard').replaceAll('.', '-')}`;
  return name.length <= 63 ? name : `https-${index}`;
}

/**
 * classGateway reads the TLS hosts of a class's main Ingresses (oldest first) into its Gateway's listeners; a
 * passed-through host gets a TLS listener instead of an HTTPS one (its certificate is the backend's own).
 */
export function classGateway(
  name: string,
  namespace: string,
  members: readonly Ident[],
  passthrough: ReadonlySet<string>,
  report: Report,
): ClassGateway {
  // TLS hosts: the oldest Ingress to name a host gives its certificate, as ingress-nginx settles it.
  const tls = new Map<string, Tls>();
  for (const m of members)
    for (const [i, t] of (m.ingress.spec?.tls ?? []).entries()) {
      const secret = t.secretName === undefined ? null : checkObjectName(t.secretName);
      for (const [j, raw] of (t.hosts ?? []).entries()) {
        const host = checkHost(raw);
        if (!host.ok) {
          report(m.owner, `spec.tls[${i}].hosts[${j}]`, `${host.message}; left out`);
          continue;
        }
        if (secret === null || !secret.ok) {
          report(
            m.owner,
            `spec.tls[${i}].secretName`,
            `${secret ? secret.message : 'is not set'}: ingress-nginx serves the default certificate; no HTTPS listener for ${show(host.value)}`,
          );
          continue;
        }
        if (!tls.has(host.value)) tls.set(host.value, { namespace: m.namespace, secretName: secret.value });
      }
    }
  const passthroughTls = new Set([...tls.keys()].filter((h) => passthrough.has(h)));
  for (const host of passthroughTls) tls.delete(host);
  const sections = new Map([...tls.keys()].sort().map((h, i) => [h, listenerName(h, i)]));
  const passthroughSections = new Map([...passthrough].sort().map((h, i) => [h, tlsListenerName(h, i)]));
  return { name, namespace, tls, sections, passthroughSections, passthroughTls };
}

/** gatewayObject is the Gateway: its listeners admit routes from the namespaces of the class's Ingresses. */
export function gatewayObject(
  gw: ClassGateway,
  gatewayClassName: string,
  routeNamespaces: readonly string[],
): KubeObject {
  const others = routeNamespaces.filter((ns) => ns !== gw.namespace);
  const allowedRoutes =
    others.length === 0
      ? { namespaces: { from: 'Same' } }
      : {
          namespaces: {
            from: 'Selector',
            selector: {
              matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: routeNamespaces }],
            },
          },
        };
  const listeners: Json[] = [{ name: 'http', protocol: 'HTTP', port: 80, allowedRoutes }];
  for (const [host, section] of gw.sections) {
    const t = gw.tls.get(host)!;
    listeners.push({
      name: section,
      protocol: 'HTTPS',
      port: 443,
      hostname: host,
      tls: {
        mode: 'Terminate',
        certificateRefs: [
          { kind: 'Secret', name: t.secretName, ...(t.namespace === gw.namespace ? {} : { namespace: t.namespace }) },
        ],
      },
      allowedRoutes,
    });
  }
  for (const [host, section] of gw.passthroughSections)
    listeners.push(passthroughListener(host, section, allowedRoutes));
  return {
    apiVersion: `${GATEWAY_GROUP}/v1`,
    kind: 'Gateway',
    metadata: { name: gw.name, namespace: gw.namespace },
    spec: { gatewayClassName, listeners },
  } as KubeObject;
}

/** referenceGrants let the Gateway read its Secrets in other namespaces: one grant per namespace, by name. */
export function referenceGrants(gw: ClassGateway): KubeObject[] {
  // A Secret in another namespace than the Gateway needs that namespace's consent.
  const foreign = new Map<string, Set<string>>();
  for (const t of gw.tls.values())
    if (t.namespace !== gw.namespace)
      foreign.set(t.namespace, (foreign.get(t.namespace) ?? new Set()).add(t.secretName));
  return [...foreign]
    .sort(([a], [b]) => compare(a, b))
    .map(
      ([ns, secrets]) =>
        ({
          apiVersion: `${GATEWAY_GROUP}/v1beta1`,
          kind: 'ReferenceGrant',
          metadata: { name: objectName(gw.name, 'certificates'), namespace: ns },
          spec: {
            from: [{ group: GATEWAY_GROUP, kind: 'Gateway', namespace: gw.namespace }],
            to: [...secrets].sort().map((name) => ({ group: '', kind: 'Secret', name })),
          },
        }) as KubeObject,
    );
}
