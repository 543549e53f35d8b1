import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ControllerConfig, SelfSignedWebhookFlags } from '../config.js';
import { STATUS_PAGE_MODES, type StatusPageMode } from '../http/status-page.js';
import { defaultBuildOptions, type BuildOptions } from '../model/build-types.js';
import { isGatewayControllerName } from '../model/gateway/values.js';
import { checkDnsLabel, checkIp, checkObjectName } from '../model/validate.js';
import { DEFAULT_TEMPLATE } from '../render/load.js';
import { classFlags, parseFlags, parsePort, UnsupportedFlagError } from './flags.js';
import { UsageError } from '../usage-error.js';
import { expandEnvRefs, INGRESS_NGINX_FLAGS } from './ingress-nginx-flags.js';
import { METRICS_BOOLEAN_FLAGS, METRICS_FLAGS, parseMetricsFlags } from './metrics-flags.js';

export const CONTROLLER_USAGE =
  `Usage: ingress-actors controller [flags]

  --kubeconfig FILE                 (else the files KUBECONFIG lists, else in-cluster)
  --ingress-class NAME              (nginx)          --controller-class NAME (k8s.io/ingress-nginx)
  --watch-ingress-without-class     --watch-namespace NS (all)
  --configmap ns/name               --default-ssl-certificate ns/name
  --default-backend-service ns/name (unknown hosts and unmatched paths; else a 404)
  --http-port N (80)                --https-port N (443)         --healthz-port N (10254)
  --healthz-host IP (all addresses)  --status-page loopback|all|off (loopback: the status page on the healthz port)
  --sync-rate-limit R (0.3)         --nginx-binary PATH (env NGINX_BINARY, else nginx)
  --template FILE
  --config-dir DIR                  (as root /var/lib/ingress-actors, else $TMPDIR/ingress-actors-UID; private to ` +
  `this user)
  --drain-timeout S (5)             --shutdown-timeout S (30)
  --restart-intensity N (5)         --restart-period S (30)
  --inspect                         --inspect-port N (8080: the Stately inspector, on 127.0.0.1)
  --publish-service ns/name         --publish-status-address ADDR[,ADDR]
  --update-status=true|false (true) --update-status-on-shutdown=true|false (true)
  --election-id NAME (ingress-controller-leader)                 --election-ttl S (30)
  --validating-webhook [IP]:PORT    (the admission webhook, HTTPS; off when absent)
  --validating-webhook-certificate FILE   --validating-webhook-key FILE   (PEM; read again when they change)
  --validating-webhook-secret ns/name     (instead of the files: the controller makes a CA and serving certificate
                                           in this Secret, shared by all replicas, renewed 30 days before its end)
  --validating-webhook-service ns/name    (with the Secret: the Service the API server calls, for the DNS names)
  --validating-webhook-configuration NAME (with the Secret: the ValidatingWebhookConfiguration whose webhooks
                                           calling that Service get the caBundle)
  --dynamic-backends=true|false (true: endpoints and certificates pushed to nginx's Lua balancer, no reload;
                                 false, or nginx without libnginx-mod-http-lua: rendered into nginx.conf)
  --routes-as-data=true|false (true: with --dynamic-backends, Ingress hosts without server-level settings are
                               routed by Lua from a pushed table, an Ingress change is a push, not a reload;
                               false: every host keeps a server block of its own in nginx.conf)
  --tcp-services-configmap ns/name  --udp-services-configmap ns/name
                                    ("9000": "namespace/service:port[:PROXY[:PROXY]]", through nginx's stream module)
  --enable-ssl-passthrough          (the ssl-passthrough annotation: TLS routed by SNI to the backend undecrypted)
  --enable-gateway-api=true|false (true: watch gateway.networking.k8s.io; kinds whose CRD is absent wait unserved)
  --gateway-controller-name NAME (ingress-actors.io/gateway-controller: the GatewayClass controllerName that is ours)
  --gateway-addresses IP[,IP|,IPv4-IPv4] (each accepted Gateway gets its own address, nginx listens there for it;
                                          absent: all Gateways share nginx's address and their routes merge)
  --enable-metrics=true|false (true: count requests for /metrics; needs --dynamic-backends)
  --metrics-per-host=true|false (true)  --metrics-per-undefined-host (false)  --report-status-classes (false)
  --time-buckets, --length-buckets, --size-buckets LIST   --exclude-socket-metrics NAMES   (ingress-nginx's)
  --version

Every other flag of ingress-nginx's controller (and klog's) is accepted, with a warning naming why it is
ignored here; --v=N sets the log level. Values may hold $(POD_NAMESPACE)-style references, read from the
environment as the kubelet expands them. ingress-nginx's image name as the first argument
(/nginx-ingress-controller) and flags alone both run the controller.`;

/**
 * defaultConfigDir is where the controller keeps nginx.conf, keys and nginx's temp files unless
 * told: as root a folder under /var/lib (beside Debian's /var/lib/nginx, on disk, as request
 * bodies buffered there may be large, and not in a folder every user can create names in), else
 * one of this user's in the temp folder. Either is refused at start unless it is this user's own,
 * not writable by others and not a link (src/nginx/private-files.ts ensurePrivateDir).
 */
export function defaultConfigDir(euid = process.geteuid?.() ?? 0): string {
  return euid === 0 ? '/var/lib/ingress-actors' : join(tmpdir(), `ingress-actors-${euid}`);
}

/** IgnoredFlag is an ingress-nginx flag given on the command line that has no meaning here, and why. */
export interface IgnoredFlag {
  readonly flag: string;
  readonly reason: string;
}

const FOREIGN = Object.entries(INGRESS_NGINX_FLAGS);
const BOOLEAN_FLAGS = [
  'update-status',
  'update-status-on-shutdown',
  'dynamic-backends',
  'routes-as-data',
  'enable-ssl-passthrough',
  'enable-gateway-api',
  'watch-ingress-without-class',
  'version',
  ...METRICS_BOOLEAN_FLAGS,
  ...FOREIGN.filter(([, f]) => f.kind === 'bool').map(([name]) => name),
];
const HOSTNAME = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$/;

/** boolFlag reads a Go-style boolean flag (`--flag`, `--flag=false`); the fallback when absent. */
export function boolFlag(flag: string, value: string | undefined, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  throw new UsageError(`--${flag} must be true or false, not ${JSON.stringify(value)}`);
}

function statusAddresses(value: string | undefined): string[] {
  if (value === undefined) return [];
  const addresses = value.split(/,\s*/).filter((a) => a !== '');
  for (const a of addresses) {
    if (!isIP(a) && !HOSTNAME.test(a))
      throw new UsageError(`--publish-status-address: ${JSON.stringify(a)} is neither an IP address nor a host name`);
  }
  return addresses;
}

function ref(flag: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const [ns, name, ...rest] = value.split('/');
  if (rest.length > 0 || !checkDnsLabel(ns).ok || !checkObjectName(name).ok) {
    throw new UsageError(`${flag} must be namespace/name, not ${JSON.stringify(value)}`);
  }
  return value;
}

const GO_UNITS: Readonly<Record<string, number>> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 1e-3, µs: 1e-3 };

/** goDuration reads a Go duration (`30s`, `1m30s`, `500ms`) into ms, or null: a scan, one unit after each number. */
function goDuration(value: string): number | null {
  let ms = 0;
  let i = 0;
  while (i < value.length) {
    const start = i;
    while (i < value.length && /[0-9.]/.test(value[i]!)) i++;
    const number = value.slice(start, i);
    const unitStart = i;
    while (i < value.length && !/[0-9.]/.test(value[i]!)) i++;
    const scale = GO_UNITS[value.slice(unitStart, i)];
    if (!/^\d+(\.\d+)?$/.test(number) || scale === undefined) return null;
    ms += Number(number) * scale;
  }
  return value.length > 0 ? ms : null;
}

/** seconds reads a number of seconds, or a Go duration as ingress-nginx's flags take them (`30s`, `1m30s`), in ms. */
function seconds(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback * 1000;
  if (/^\d+(\.\d+)?$/.test(value)) return Number(value) * 1000;
  const ms = value.length <= 64 ? goDuration(value) : null;
  if (ms === null)
    throw new UsageError(
      `${flag} must be a number of seconds or a duration (30s, 1m30s), not ${JSON.stringify(value)}`,
    );
  return ms;
}

/**
 * webhookFlags reads `--validating-webhook` (Go's `[host]:port`: `:8443`, `127.0.0.1:8443`, `[::1]:8443`) and its
 * certificate and key, which it needs; null when the webhook is off.
 */
function webhookFlags(values: Readonly<Record<string, unknown>>): ControllerConfig['webhook'] {
  const address = values['validating-webhook'] as string | undefined;
  const certFile = values['validating-webhook-certificate'] as string | undefined;
  const keyFile = values['validating-webhook-key'] as string | undefined;
  const selfSigned = selfSignedFlags(values);
  if (address === undefined || address === '') {
    if (selfSigned) throw new UsageError('--validating-webhook-secret needs --validating-webhook');
    return null;
  }
  const at = address.lastIndexOf(':');
  if (at < 0) throw new UsageError(`--validating-webhook must be [IP]:PORT, not ${JSON.stringify(address)}`);
  const rawHost = address.slice(0, at);
  const host = rawHost.startsWith('[') && rawHost.endsWith(']') ? rawHost.slice(1, -1) : rawHost;
  if (host !== '' && !checkIp(host).ok)
    throw new UsageError(`--validating-webhook: ${JSON.stringify(rawHost)} is not an IP address`);
  const port = parsePort('--validating-webhook', address.slice(at + 1), 8443);
  const where = { ...(host === '' ? {} : { host }), port };
  if (selfSigned) {
    if (certFile || keyFile)
      throw new UsageError(
        '--validating-webhook-secret and --validating-webhook-certificate/-key both name the certificate; give one',
      );
    return { ...where, selfSigned };
  }
  if (!certFile || !keyFile)
    throw new UsageError(
      '--validating-webhook needs --validating-webhook-certificate and --validating-webhook-key, ' +
        'or --validating-webhook-secret',
    );
  return { ...where, certFile, keyFile };
}

/** selfSignedFlags reads the Secret, Service and configuration of a self-made webhook certificate; null without. */
function selfSignedFlags(values: Readonly<Record<string, unknown>>): SelfSignedWebhookFlags | null {
  const secret = ref('--validating-webhook-secret', values['validating-webhook-secret'] as string | undefined);
  const service = ref('--validating-webhook-service', values['validating-webhook-service'] as string | undefined);
  const configuration = values['validating-webhook-configuration'] as string | undefined;
  if (!secret) {
    if (service || configuration !== undefined)
      throw new UsageError(
        '--validating-webhook-service and --validating-webhook-configuration go with --validating-webhook-secret',
      );
    return null;
  }
  if (!service)
    throw new UsageError('--validating-webhook-secret needs --validating-webhook-service (the certificate’s names)');
  if (configuration !== undefined && !checkObjectName(configuration).ok)
    throw new UsageError(
      `--validating-webhook-configuration must be a ValidatingWebhookConfiguration name, not ${JSON.stringify(configuration)}`,
    );
  const split = (r: string) => {
    const [namespace, name] = r.split('/') as [string, string];
    return { namespace, name };
  };
  return { secret: split(secret), service: split(service), configuration: configuration ?? null };
}

/** DEFAULT_GATEWAY_CONTROLLER_NAME is `--gateway-controller-name`'s default. */
export const DEFAULT_GATEWAY_CONTROLLER_NAME = 'ingress-actors.io/gateway-controller';

/** gatewayOptions reads `--enable-gateway-api` and `--gateway-controller-name` into BuildOptions.gateway. */
function gatewayOptions(values: Readonly<Record<string, unknown>>): Pick<BuildOptions, 'gateway'> {
  const name = (values['gateway-controller-name'] as string | undefined) ?? DEFAULT_GATEWAY_CONTROLLER_NAME;
  if (!isGatewayControllerName(name))
    throw new UsageError(
      `--gateway-controller-name must be a domain-prefixed path (example.com/controller), not ${JSON.stringify(name)}`,
    );
  const enabled = boolFlag('enable-gateway-api', values['enable-gateway-api'] as string | undefined, true);
  const addresses = gatewayAddressPool(values['gateway-addresses'] as string | undefined);
  return enabled ? { gateway: { controllerName: name, ...(addresses ? { addresses } : {}) } } : {};
}

/** MAX_POOL bounds `--gateway-addresses` (a range expands to one entry per address). */
const MAX_POOL = 4096;

const ipv4Number = (ip: string) => ip.split('.').reduce((n, part) => n * 256 + Number(part), 0);
const ipv4Text = (n: number) => [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.');

/**
 * gatewayAddressPool reads `--gateway-addresses`: IP addresses and IPv4 ranges (`127.0.0.10-127.0.0.20`), comma
 * separated, each address once, in the order written (the order Gateways get them in).
 */
export function gatewayAddressPool(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const pool: string[] = [];
  const add = (ip: string) => {
    if (pool.includes(ip)) throw new UsageError(`--gateway-addresses: ${ip} is given twice`);
    if (pool.length >= MAX_POOL) throw new UsageError(`--gateway-addresses: more than ${MAX_POOL} addresses`);
    pool.push(ip);
  };
  for (const item of value.split(',').map((a) => a.trim())) {
    const [from, to, ...rest] = item.split('-');
    const first = checkIp(from);
    if (!first.ok || rest.length > 0)
      throw new UsageError(`--gateway-addresses: ${JSON.stringify(item)} is not an IP address or an IPv4 range`);
    if (to === undefined) {
      add(first.value.address);
      continue;
    }
    const last = checkIp(to);
    if (!last.ok || first.value.family !== 4 || last.value.family !== 4)
      throw new UsageError(`--gateway-addresses: ${JSON.stringify(item)} is not a range of IPv4 addresses`);
    const [a, b] = [ipv4Number(first.value.address), ipv4Number(last.value.address)];
    if (b < a) throw new UsageError(`--gateway-addresses: the range ${JSON.stringify(item)} ends before it starts`);
    if (b - a >= MAX_POOL) throw new UsageError(`--gateway-addresses: more than ${MAX_POOL} addresses`);
    for (let n = a; n <= b; n++) add(ipv4Text(n));
  }
  return pool;
}

function electionId(value: string | undefined): string {
  if (value === undefined) return 'ingress-controller-leader';
  if (!checkObjectName(value).ok)
    throw new UsageError(`--election-id must be a Lease name, not ${JSON.stringify(value)}`);
  return value;
}

function electionTtl(value: string | undefined): number {
  const ms = seconds('--election-ttl', value, 30);
  if (ms < 1000) throw new UsageError('--election-ttl must be at least 1 second (a Lease counts whole seconds)');
  return ms;
}

/**
 * samePort refuses two listeners given one port (the second would only fail at start, or the inspector take nginx's
 * port).
 */
export function samePort(ports: Readonly<Record<string, number>>): void {
  const seen = new Map<number, string>();
  for (const [flag, port] of Object.entries(ports)) {
    const other = seen.get(port);
    if (other) throw new UsageError(`${other} and ${flag} are both ${port}; give them different ports`);
    seen.set(port, flag);
  }
}

/**
 * ignoredFlags lists the ingress-nginx flags given that mean nothing here, and refuses (exit 1) one whose value this
 * controller cannot honour without serving more than it was told to.
 */
function ignoredFlags(values: Readonly<Record<string, unknown>>): IgnoredFlag[] {
  const ignored: IgnoredFlag[] = [];
  for (const [name, flag] of FOREIGN) {
    const value = values[name];
    if (typeof value !== 'string') continue;
    if (flag.onlyDefault) {
      if (flag.onlyDefault.includes(value)) continue;
      throw new UnsupportedFlagError(`--${name}=${value} is not supported: ${flag.reason}`);
    }
    ignored.push({ flag: `--${name}`, reason: flag.reason });
  }
  return ignored;
}

/** ParsedControllerFlags is the config with the ignored flags, or a request for the usage or the version. */
export type ParsedControllerFlags =
  | { config: ControllerConfig; ignored: IgnoredFlag[] }
  | { help: true }
  | { version: true };

/**
 * parseControllerFlags reads the controller's flags (ingress-nginx's names) into a ControllerConfig. Values may hold
 * `$(POD_NAMESPACE)`-style references, expanded from `env` as the kubelet does.
 */
export function parseControllerFlags(argv: string[], env: NodeJS.ProcessEnv = process.env): ParsedControllerFlags {
  // A bare boolean flag means true, as Go's flag package has it.
  const args = argv.map((arg) =>
    BOOLEAN_FLAGS.some((f) => arg === `--${f}`) ? `${arg}=true` : expandEnvRefs(arg, env),
  );
  const { values } = parseFlags(
    args,
    {
      kubeconfig: { type: 'string' },
      'watch-namespace': { type: 'string' },
      configmap: { type: 'string' },
      'default-ssl-certificate': { type: 'string' },
      'default-backend-service': { type: 'string' },
      'http-port': { type: 'string' },
      'https-port': { type: 'string' },
      'healthz-port': { type: 'string' },
      'healthz-host': { type: 'string' },
      'status-page': { type: 'string' },
      'sync-rate-limit': { type: 'string' },
      'nginx-binary': { type: 'string' },
      template: { type: 'string' },
      'config-dir': { type: 'string' },
      'drain-timeout': { type: 'string' },
      'shutdown-timeout': { type: 'string' },
      'restart-intensity': { type: 'string' },
      'restart-period': { type: 'string' },
      inspect: { type: 'boolean' },
      'inspect-port': { type: 'string' },
      'publish-service': { type: 'string' },
      'publish-status-address': { type: 'string' },
      'update-status': { type: 'string' },
      'update-status-on-shutdown': { type: 'string' },
      'dynamic-backends': { type: 'string' },
      'routes-as-data': { type: 'string' },
      'tcp-services-configmap': { type: 'string' },
      'udp-services-configmap': { type: 'string' },
      'enable-ssl-passthrough': { type: 'string' },
      'enable-gateway-api': { type: 'string' },
      'gateway-controller-name': { type: 'string' },
      'gateway-addresses': { type: 'string' },
      'election-id': { type: 'string' },
      'election-ttl': { type: 'string' },
      'validating-webhook': { type: 'string' },
      'validating-webhook-certificate': { type: 'string' },
      'validating-webhook-key': { type: 'string' },
      'validating-webhook-secret': { type: 'string' },
      'validating-webhook-service': { type: 'string' },
      'validating-webhook-configuration': { type: 'string' },
      ...classFlags,
      // Go-style here (the Helm chart writes --watch-ingress-without-class=true); render keeps the plain switch.
      'watch-ingress-without-class': { type: 'string' },
      version: { type: 'string' },
      ...Object.fromEntries(METRICS_FLAGS.map((flag) => [flag, { type: 'string' as const }])),
      ...Object.fromEntries(FOREIGN.map(([flag]) => [flag, { type: 'string' as const }])),
      help: { type: 'boolean', short: 'h' },
    },
    CONTROLLER_USAGE,
  );
  if (values.help) return { help: true };
  if (boolFlag('version', values.version, false)) return { version: true };
  const ignored = ignoredFlags(values);
  const rate = values['sync-rate-limit'] === undefined ? 0.3 : Number(values['sync-rate-limit']);
  if (!(rate > 0))
    throw new UsageError(
      '--sync-rate-limit must be a positive number ' +
        `of syncs per second, not ${JSON.stringify(values['sync-rate-limit'])}`,
    );
  const intensity = values['restart-intensity'] === undefined ? 5 : Number(values['restart-intensity']);
  if (!Number.isInteger(intensity) || intensity < 0) throw new UsageError('--restart-intensity must be a whole number');
  const namespace = values['watch-namespace'];
  if (namespace !== undefined && !checkDnsLabel(namespace).ok)
    throw new UsageError(`--watch-namespace ${JSON.stringify(namespace)} is not a namespace name`);
  const configMap = ref('--configmap', values.configmap);
  const defaultSslCertificate = ref('--default-ssl-certificate', values['default-ssl-certificate']);
  const defaultBackendService = ref('--default-backend-service', values['default-backend-service']);
  const tcpServices = ref('--tcp-services-configmap', values['tcp-services-configmap']);
  const udpServices = ref('--udp-services-configmap', values['udp-services-configmap']);
  const healthzPort = parsePort('--healthz-port', values['healthz-port'], 10254);
  const inspectPort =
    values['inspect-port'] === undefined ? null : parsePort('--inspect-port', values['inspect-port'], 8080);
  const inspect = values.inspect ?? false;
  const webhook = webhookFlags(values);
  const webhookPort: Record<string, number> = webhook ? { '--validating-webhook': webhook.port } : {};
  const build: BuildOptions = {
    ingressClass: values['ingress-class'] ?? defaultBuildOptions.ingressClass,
    controllerClass: values['controller-class'] ?? defaultBuildOptions.controllerClass,
    watchIngressWithoutClass: boolFlag('watch-ingress-without-class', values['watch-ingress-without-class'], false),
    httpPort: parsePort('--http-port', values['http-port'], 80),
    httpsPort: parsePort('--https-port', values['https-port'], 443),
    ...(configMap ? { configMap } : {}),
    ...(defaultSslCertificate ? { defaultSslCertificate } : {}),
    ...(defaultBackendService ? { defaultBackendService } : {}),
    ...(tcpServices ? { tcpServicesConfigMap: tcpServices } : {}),
    ...(udpServices ? { udpServicesConfigMap: udpServices } : {}),
    enableSslPassthrough: boolFlag('enable-ssl-passthrough', values['enable-ssl-passthrough'], false),
    ...gatewayOptions(values),
    // TCP and UDP services may not take the controller's own ports.
    reservedPorts: [
      healthzPort,
      ...(inspect || inspectPort !== null ? [inspectPort ?? 8080] : []),
      ...Object.values(webhookPort),
    ],
  };
  const healthzHost = values['healthz-host'];
  const statusPage = values['status-page'] ?? 'loopback';
  if (!(STATUS_PAGE_MODES as readonly string[]).includes(statusPage))
    throw new UsageError(`--status-page must be loopback, all or off, not ${JSON.stringify(statusPage)}`);
  if (healthzHost !== undefined && !checkIp(healthzHost).ok)
    throw new UsageError(`--healthz-host must be an IP address, not ${JSON.stringify(healthzHost)}`);
  if (inspect || inspectPort !== null)
    samePort({
      '--inspect-port': inspectPort ?? 8080,
      '--http-port': build.httpPort,
      '--https-port': build.httpsPort,
      '--healthz-port': healthzPort,
      ...webhookPort,
    });
  else
    samePort({
      '--http-port': build.httpPort,
      '--https-port': build.httpsPort,
      '--healthz-port': healthzPort,
      ...webhookPort,
    });
  return {
    ignored,
    config: {
      kubeconfig: values.kubeconfig ?? null,
      watchNamespace: namespace ?? null,
      build,
      healthzPort,
      healthzHost: healthzHost ?? null,
      statusPage: statusPage as StatusPageMode,
      syncRateLimit: rate,
      nginxBinary: values['nginx-binary'] ?? null,
      dynamicBackends: boolFlag('dynamic-backends', values['dynamic-backends'], true),
      routesAsData: boolFlag('routes-as-data', values['routes-as-data'], true),
      template: values.template ?? DEFAULT_TEMPLATE,
      configDir: values['config-dir'] ?? defaultConfigDir(),
      drainTimeoutMs: seconds('--drain-timeout', values['drain-timeout'], 5),
      shutdownTimeoutMs: seconds('--shutdown-timeout', values['shutdown-timeout'], 30),
      restartIntensity: intensity,
      restartPeriodMs: seconds('--restart-period', values['restart-period'], 30),
      inspect,
      inspectPort,
      webhook,
      metrics: parseMetricsFlags(values),
      status: {
        publishService: ref('--publish-service', values['publish-service']) ?? null,
        publishStatusAddress: statusAddresses(values['publish-status-address']),
        updateStatus: boolFlag('update-status', values['update-status'], true),
        updateStatusOnShutdown: boolFlag('update-status-on-shutdown', values['update-status-on-shutdown'], true),
        electionId: electionId(values['election-id']),
        electionTtlMs: electionTtl(values['election-ttl']),
      },
    },
  };
}
