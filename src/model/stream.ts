/**
 * The stream block: ingress-nginx's `--tcp-services-configmap` and `--udp-services-configmap`
 * (`"9000": "namespace/service:port[:PROXY[:PROXY]]"`) and `--enable-ssl-passthrough` with the
 * `ssl-passthrough` annotation, as nginx's stream module serves them. Pure: it reads the snapshot
 * and the http model that buildModel already made. Every ConfigMap key and value is validated;
 * an entry that fails is reported naming the ConfigMap and its key, and the others are served.
 */
import { BuiltUpstreams, compare, UpstreamTable } from './backends.js';
import { notOwnerMessage } from './host-rules.js';
import type { IngressPlan } from './ingress-plan.js';
import { type Lookups, TrackedReads } from './lookups.js';
import type {
  BalancedUpstream,
  GlobalConfig,
  PassthroughHost,
  Problem,
  Server,
  StreamModel,
  StreamService,
  StreamUpstream,
} from './nginx-model.js';
import type { StreamOptions } from './build-types.js';
import type { StreamSettings } from './machine-settings.js';
import type { ConfigMap, Snapshot } from './snapshot.js';
import { checkDnsLabel, checkPortName, checkPortNumber, show } from './validate.js';
import { ANNOTATION_PREFIX } from './annotations/types.js';

/** DEFAULT_STREAM_SETTINGS are Debian's module path and the root default config folder (render without nginx). */
export const DEFAULT_STREAM_SETTINGS: StreamSettings = Object.freeze({
  modules: ['/usr/lib/nginx/modules/ngx_stream_module.so'],
  socketDir: '/var/lib/ingress-actors',
});

/** HTTPS_SOCKET and RELAY_SOCKET are the internal unix sockets of ssl-passthrough, in the config folder. */
export const HTTPS_SOCKET = 'https.sock';
export const RELAY_SOCKET = 'passthrough.sock';

/** What the stream block is made from besides the options: the snapshot and the finished http model's parts. */
export interface StreamInput {
  readonly snapshot: Snapshot;
  readonly lookups: Lookups;
  readonly config: GlobalConfig;
  /** the plans of Ingresses with ssl-passthrough set, in age order */
  readonly passthroughPlans: readonly IngressPlan[];
  readonly servers: readonly Server[];
  readonly upstreams: readonly BalancedUpstream[];
  /** the `host` part of the listen directives (`127.0.0.1:`), or '' for all addresses */
  readonly listenHost: string;
}

const PORT_KEY = /^[0-9]{1,5}$/;
const NUMBER = /^[0-9]{1,5}$/;
/** A reference longer than this cannot be valid (253 + 63 + 15 + two PROXY flags and separators). */
const MAX_REFERENCE = 400;

/** buildStream gives the stream block (null when no flag asks for one) and reports the entries it left out. */
export function buildStream(options: StreamOptions, input: StreamInput, problems: Problem[]): StreamModel | null {
  const passthroughRequested = input.passthroughPlans;
  if (!options.enableSslPassthrough)
    for (const plan of passthroughRequested)
      problems.push({
        kind: 'Ingress',
        namespace: plan.identified!.namespace,
        name: plan.identified!.name,
        field: `metadata.annotations.${ANNOTATION_PREFIX}ssl-passthrough`,
        message: 'needs the controller flag --enable-ssl-passthrough; ignored',
      });
  if (!options.tcpServicesConfigMap && !options.udpServicesConfigMap && !options.enableSslPassthrough) return null;
  const settings = options.stream ?? DEFAULT_STREAM_SETTINGS;
  const upstreams = new Map<string, StreamUpstream>();
  const table = new UpstreamTable(new TrackedReads(input.lookups), new BuiltUpstreams());
  const reserved = new Set([options.httpPort, options.httpsPort, ...(options.reservedPorts ?? [])]);
  const services = [
    ...servicesOf('TCP', options.tcpServicesConfigMap, input, reserved, table, upstreams, problems),
    ...servicesOf('UDP', options.udpServicesConfigMap, input, reserved, table, upstreams, problems),
  ];
  for (const problem of table.sliceProblems.values()) problems.push(problem);
  const passthrough = options.enableSslPassthrough
    ? {
        listen: `${input.listenHost}${options.httpsPort}`,
        decodeProxy: input.config.useProxyProtocol,
        realIpFrom: input.config.useProxyProtocol ? input.config.proxyRealIpCidr : [],
        httpsSocket: `${settings.socketDir}/${HTTPS_SOCKET}`,
        relaySocket: `${settings.socketDir}/${RELAY_SOCKET}`,
        hosts: passthroughHosts(passthroughRequested, input, upstreams, problems),
      }
    : null;
  return {
    modules: settings.modules,
    upstreams: [...upstreams.values()].sort((a, b) => compare(a.name, b.name)),
    services,
    passthrough,
  };
}

/** findConfigMap finds `ns/name` in the snapshot. */
function findConfigMap(snapshot: Snapshot, ref: string): ConfigMap | undefined {
  return snapshot.configMaps.find((c) => `${c.metadata?.namespace}/${c.metadata?.name}` === ref);
}

/** servicesOf reads one services ConfigMap, entries sorted by port as ingress-nginx sorts them. */
function servicesOf(
  protocol: 'TCP' | 'UDP',
  ref: string | undefined,
  input: StreamInput,
  reserved: ReadonlySet<number>,
  table: UpstreamTable,
  upstreams: Map<string, StreamUpstream>,
  problems: Problem[],
): StreamService[] {
  if (!ref) return [];
  const configMap = findConfigMap(input.snapshot, ref);
  if (!configMap) return [];
  const [namespace = '', name = ''] = ref.split('/');
  const flag = protocol === 'TCP' ? '--tcp-services-configmap' : '--udp-services-configmap';
  const entries = Object.entries(configMap.data ?? {})
    .map(([key, value]) => ({ key, value, port: PORT_KEY.test(key) ? Number(key) : NaN }))
    .sort((a, b) => a.port - b.port || compare(a.key, b.key));
  const out: StreamService[] = [];
  for (const { key, value, port } of entries) {
    const report = (message: string) =>
      problems.push({ kind: 'ConfigMap', namespace, name, field: `data.${key}`, message: `${message}; not served` });
    if (!(port >= 1 && port <= 65535)) {
      report(`${show(key)} is not a port number (1-65535) for a ${protocol} service`);
      continue;
    }
    if (reserved.has(port)) {
      report(`port ${port} is the controller's own (${flag} cannot take --http-port, --https-port or --healthz-port)`);
      continue;
    }
    const entry = parseReference(value, protocol, (message) =>
      problems.push({ kind: 'ConfigMap', namespace, name, field: `data.${key}`, message }),
    );
    if (typeof entry === 'string') {
      report(entry);
      continue;
    }
    const upstream = resolveStreamBackend(protocol, entry, input.lookups, table, `data.${key}`);
    if (typeof upstream === 'string') {
      report(upstream);
      continue;
    }
    upstreams.set(upstream.name, upstream);
    out.push({
      source: `${ref} ${port}`,
      listen: `${input.listenHost}${port}`,
      udp: protocol === 'UDP',
      upstream: upstream.name,
      decodeProxy: entry.decodeProxy,
      encodeProxy: entry.encodeProxy,
      realIpFrom: entry.decodeProxy ? input.config.proxyRealIpCidr : [],
    });
  }
  return out;
}

export interface Reference {
  readonly namespace: string;
  readonly service: string;
  readonly port: number | string;
  readonly decodeProxy: boolean;
  readonly encodeProxy: boolean;
}

/**
 * parseReference reads `namespace/service:port[:PROXY[:PROXY]]`; a message when it is not one. PROXY flags on a UDP
 * entry are noted and ignored (the PROXY protocol is for TCP, as ingress-nginx has it).
 */
export function parseReference(
  value: string,
  protocol: 'TCP' | 'UDP',
  note: (message: string) => void,
): Reference | string {
  const shape = 'must be namespace/service:port, optionally followed by :PROXY and :PROXY';
  if (value.length > MAX_REFERENCE) return `${show(value)} is too long: ${shape}`;
  const parts = value.split(':');
  if (parts.length < 2 || parts.length > 4) return `${show(value)} ${shape}`;
  const [ref = '', portText = '', ...flags] = parts;
  const names = ref.split('/');
  if (names.length !== 2) return `${show(value)} ${shape}`;
  const namespace = checkDnsLabel(names[0]);
  if (!namespace.ok) return `namespace: ${namespace.message}`;
  const service = checkDnsLabel(names[1]);
  if (!service.ok) return `service: ${service.message}`;
  const port = NUMBER.test(portText) ? checkPortNumber(Number(portText)) : checkPortName(portText);
  if (!port.ok) return `port: ${port.message}`;
  for (const flag of flags)
    if (flag !== '' && flag.toUpperCase() !== 'PROXY') return `${show(flag)} is not PROXY: ${shape}`;
  const [decode, encode] = [flags[0]?.toUpperCase() === 'PROXY', flags[1]?.toUpperCase() === 'PROXY'];
  if (protocol === 'UDP' && (decode || encode)) {
    note('the PROXY protocol is for TCP services only; the PROXY flags are ignored');
    return {
      namespace: namespace.value,
      service: service.value,
      port: port.value,
      decodeProxy: false,
      encodeProxy: false,
    };
  }
  return {
    namespace: namespace.value,
    service: service.value,
    port: port.value,
    decodeProxy: decode,
    encodeProxy: encode,
  };
}

/**
 * resolveStreamBackend finds the Service port of `protocol` and its ready endpoints; a message when there are none.
 * The Gateway API's TCP, UDP and TLS routes resolve their backends with it too (src/model/gateway/nginx-stream.ts).
 */
export function resolveStreamBackend(
  protocol: 'TCP' | 'UDP',
  entry: Reference,
  lookups: Lookups,
  table: UpstreamTable,
  field: string,
): StreamUpstream | string {
  const key = `${entry.namespace}/${entry.service}`;
  const service = lookups.services.get(key);
  if (!service) return `Service ${key} not found`;
  if (service.spec?.type === 'ExternalName') return `Service ${key} is of type ExternalName, which is not supported`;
  // A Service may have one number twice, for TCP and for UDP (DNS's 53): the port of this protocol first.
  const named = (service.spec?.ports ?? []).filter((p) =>
    typeof entry.port === 'number' ? p.port === entry.port : p.name === entry.port,
  );
  const servicePort = named.find((p) => (p.protocol ?? 'TCP') === protocol) ?? named[0];
  if (!servicePort) return `Service ${key} has no port ${show(entry.port)}`;
  const portText = typeof entry.port === 'number' ? String(entry.port) : show(entry.port);
  if ((servicePort.protocol ?? 'TCP') !== protocol)
    return `Service ${key} port ${portText} is ${servicePort.protocol ?? 'TCP'}, not ${protocol}`;
  const resolved = table.resolve(
    entry.namespace,
    { service: { name: entry.service, port: { number: servicePort.port! } } },
    field,
    () => undefined,
  );
  const upstream = resolved.upstream === null ? undefined : table.used.get(resolved.upstream);
  if (!upstream || upstream.endpoints.length === 0) return `Service ${key} port ${portText} has no ready endpoints`;
  return { name: `${protocol.toLowerCase()}_${upstream.name}`, service: key, endpoints: upstream.endpoints };
}

/**
 * passthroughHosts maps each host whose owner (the oldest Ingress naming it, src/model/host-rules.ts hostOwner) asks
 * for ssl-passthrough to the upstream of the owner's own `/` path. ingress-nginx lets any Ingress naming a host flip it
 * (and its `/` take the host's TLS); here a newer Ingress, another namespace's included, can neither flip the host nor
 * catch its streams: its request is reported naming the owner. A host without an owner's `/`, or the catch-all, is
 * reported and left to nginx's TLS.
 */
function passthroughHosts(
  plans: readonly IngressPlan[],
  input: StreamInput,
  upstreams: Map<string, StreamUpstream>,
  problems: Problem[],
): PassthroughHost[] {
  const servers = new Map(input.servers.map((s) => [s.host, s]));
  const http = new Map(input.upstreams.map((u) => [u.name, u]));
  const passthroughOwners = new Set(plans.map((plan) => plan.identified!.owner));
  const hosts = new Map<string, PassthroughHost>();
  for (const plan of plans) {
    const { namespace, name, ingress, owner } = plan.identified!;
    const report = (field: string, message: string) =>
      problems.push({ kind: 'Ingress', namespace, name, field, message: `ssl-passthrough: ${message}` });
    const refused = new Set<string>();
    for (const [i, rule] of (ingress.spec?.rules ?? []).entries()) {
      const host = rule.host ?? '';
      const server = servers.get(host);
      if (hosts.has(host) || refused.has(host) || !server) continue;
      if (server.isDefault || host === '') {
        report(`spec.rules[${i}].host`, 'needs a host (TLS clients name it in SNI); ignored for this rule');
        continue;
      }
      if (server.owner !== owner) {
        refused.add(host);
        // An owner that asks for it too decides the same: nothing to report.
        if (server.owner === null || !passthroughOwners.has(server.owner))
          problems.push({
            kind: 'Ingress',
            namespace,
            name,
            field: `metadata.annotations.${ANNOTATION_PREFIX}ssl-passthrough`,
            message: notOwnerMessage(
              host,
              server.owner ?? '(none)',
              'ssl-passthrough',
              'ignored: nginx terminates its TLS',
            ),
          });
        continue;
      }
      const root = server.locations.find((l) => l.path === '/' && l.pathType !== 'Exact' && l.upstream !== null);
      const upstream = root?.upstream ? http.get(root.upstream) : undefined;
      if (!upstream) {
        report(`spec.rules[${i}]`, `host ${host} has no backend for the path /; nginx terminates its TLS`);
        continue;
      }
      // Only the owner's own `/`: another Ingress's `/` on the host must not receive the owner's TLS streams.
      if (root!.ingress !== owner) {
        report(
          `spec.rules[${i}]`,
          `the path / of host ${host} is served by Ingress ${root!.ingress}, not this one; nginx terminates its TLS`,
        );
        continue;
      }
      if (upstream.endpoints.length === 0) {
        report(`spec.rules[${i}]`, `${upstream.service} has no ready endpoints; nginx terminates its TLS`);
        continue;
      }
      const streamName = `passthrough_${upstream.name}`;
      upstreams.set(streamName, { name: streamName, service: upstream.service, endpoints: upstream.endpoints });
      // SNI is matched as sent: the wildcard's regex ignores case, as nginx's server_name matching does.
      const match = host.startsWith('*.') ? `~*${server.serverName.slice(1)}` : host;
      hosts.set(host, { match, upstream: streamName });
    }
  }
  return [...hosts.values()].sort((a, b) => compare(a.match, b.match));
}
