/**
 * ingress-nginx's `--tcp-services-configmap` and `--udp-services-configmap` in Gateway API terms: each entry
 * (`"9000": "namespace/service:port"`) becomes a TCP (or UDP) listener on its port and a TCPRoute (UDPRoute) in the
 * Service's namespace. Entries are read by the controller's own parser (src/model/stream.ts); what it refuses is
 * reported and left out, and so is an entry with PROXY flags: Gateway API cannot say to read or send the PROXY
 * protocol, and without it the backend (or the client's load balancer) would be spoken to in another protocol.
 */
import { compare } from '../model/backends.js';
import { GATEWAY_GROUP } from '../model/gateway/types.js';
import type { KubeObject } from '../model/snapshot.js';
import { parseReference } from '../model/stream.js';
import { checkDnsLabel, checkObjectName, show } from '../model/validate.js';
import type { Json, Report } from './draft.js';
import { objectName } from './object-name.js';
import type { IngressReader } from './read-ingress.js';

/** the ports of the converted Gateway's HTTP and HTTPS listeners */
const WEB_PORTS: ReadonlySet<number> = new Set([80, 443]);

/** StreamService is one converted entry: a listener on its port and the route to its Service. */
export interface StreamService {
  readonly protocol: 'TCP' | 'UDP';
  readonly port: number;
  readonly namespace: string;
  readonly service: string;
  readonly servicePort: number;
}

/** readServicesConfigMap reads one services ConfigMap (`namespace/name`, as the controller's flag takes it). */
export function readServicesConfigMap(
  protocol: 'TCP' | 'UDP',
  ref: string,
  reader: IngressReader,
  report: Report,
): StreamService[] {
  const flag = protocol === 'TCP' ? '--tcp-services-configmap' : '--udp-services-configmap';
  const configMap = reader.configMap(ref);
  if (!configMap) {
    report(ref, 'data', `ConfigMap ${ref} (${flag}) is not in the manifests; no ${protocol}Routes made`);
    return [];
  }
  const entries = Object.entries(configMap.data ?? {})
    .map(([key, value]) => ({ key, value, port: /^[0-9]{1,5}$/.test(key) ? Number(key) : Number.NaN }))
    .sort((a, b) => a.port - b.port || compare(a.key, b.key));
  const out: StreamService[] = [];
  for (const { key, value, port } of entries) {
    const field = /^[0-9a-zA-Z._-]{1,253}$/.test(key) ? `data.${key}` : `data[${show(key)}]`;
    const leftOut = (message: string) => report(ref, field, `${message}; left out`);
    if (!(port >= 1 && port <= 65535)) {
      leftOut(`${show(key)} is not a port number (1-65535)`);
      continue;
    }
    if (WEB_PORTS.has(port)) {
      leftOut(`port ${port} is the Gateway's HTTP or HTTPS listener's (the controller refuses it too)`);
      continue;
    }
    const entry = parseReference(value, protocol, () => {});
    if (typeof entry === 'string') {
      leftOut(entry);
      continue;
    }
    if (entry.decodeProxy || entry.encodeProxy) {
      leftOut('the PROXY protocol (read from clients or sent to the backend) has no Gateway API form');
      continue;
    }
    const servicePort = reader.streamPort(entry.namespace, entry.service, entry.port, protocol);
    if (typeof servicePort === 'string') {
      leftOut(servicePort);
      continue;
    }
    out.push({ protocol, port, namespace: entry.namespace, service: entry.service, servicePort });
  }
  return out;
}

/** streamListener is the Gateway listener of one entry, open to routes of its Service's namespace alone. */
export function streamListener(s: StreamService, gatewayNamespace: string): Json {
  const namespaces =
    s.namespace === gatewayNamespace
      ? { from: 'Same' }
      : {
          from: 'Selector',
          selector: {
            matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [s.namespace] }],
          },
        };
  return { name: sectionName(s), protocol: s.protocol, port: s.port, allowedRoutes: { namespaces } };
}

const sectionName = (s: StreamService) => `${s.protocol.toLowerCase()}-${s.port}`;

/** streamRoute is the TCPRoute (UDPRoute) of one entry, beside its Service. */
export function streamRoute(
  s: StreamService,
  gateway: { readonly name: string; readonly namespace: string },
): KubeObject {
  return {
    apiVersion: `${GATEWAY_GROUP}/v1`,
    kind: `${s.protocol}Route`,
    metadata: { name: objectName(s.service, sectionName(s)), namespace: s.namespace },
    spec: {
      parentRefs: [
        {
          name: gateway.name,
          ...(s.namespace === gateway.namespace ? {} : { namespace: gateway.namespace }),
          sectionName: sectionName(s),
        },
      ],
      rules: [{ backendRefs: [{ name: s.service, port: s.servicePort }] }],
    },
  } as KubeObject;
}

/** checkConfigMapRef checks a `namespace/name` flag value; the message when it is not one. */
export function checkConfigMapRef(value: string): string | null {
  const [namespace, name, ...rest] = value.split('/');
  if (rest.length > 0 || name === undefined) return `${show(value)} is not namespace/name`;
  const ns = checkDnsLabel(namespace);
  if (!ns.ok) return ns.message;
  const n = checkObjectName(name);
  return n.ok ? null : n.message;
}
