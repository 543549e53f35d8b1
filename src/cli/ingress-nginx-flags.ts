/**
 * ingress-nginx's controller flags (its pkg/flags/flags.go, and klog's) that this controller does not implement. A
 * Helm release of ingress-nginx passes many of them; each is accepted, with one warning at start saying why it is
 * ignored, so swapping the image does not end in exit 2. The few whose absence would widen what is served, or
 * drop a check an Ingress asked for, are refused with exit 1 unless given their default value.
 */

/** ForeignFlag is one ingress-nginx flag without a meaning here. */
export interface ForeignFlag {
  /** Go's bool flags may stand alone (`--profiling`); the others take a value */
  readonly kind: 'bool' | 'value';
  /** why it is ignored, for the warning */
  readonly reason: string;
  /**
   * values that match this controller's behaviour and are accepted silently; any other value is refused (exit 1)
   * with `reason`, because ignoring it would serve what the flag was meant to keep out
   */
  readonly onlyDefault?: readonly string[];
}

const NO_PORT = 'this controller opens no such port';
const NO_GEOIP = 'GeoIP2 databases are not used (no use-geoip2)';
const NATIVE = 'native histograms are not exported: request metrics have classic buckets (--time-buckets, …)';
const KLOG = 'logs are JSON lines on stderr, readable lines on a terminal (see --log-level, --log-pretty, --log-json)';

/** INGRESS_NGINX_FLAGS are ingress-nginx's flags this controller accepts and ignores, by name. */
export const INGRESS_NGINX_FLAGS: Readonly<Record<string, ForeignFlag>> = {
  'apiserver-host': {
    kind: 'value',
    reason: 'the API server comes from --kubeconfig, KUBECONFIG or the in-cluster config',
  },
  'certificate-authority': {
    kind: 'value',
    reason: 'the API server comes from --kubeconfig, KUBECONFIG or the in-cluster config',
  },
  'ingress-class-by-name': {
    kind: 'bool',
    reason: 'Ingresses are matched by their IngressClass controller, the ingress.class annotation or --ingress-class',
  },
  'sync-period': { kind: 'value', reason: 'watches keep the caches current; there is no periodic resync' },
  'watch-namespace-selector': {
    kind: 'value',
    reason: 'namespace selectors are not implemented: every namespace (or --watch-namespace) would be served',
    onlyDefault: [''],
  },
  profiling: { kind: 'bool', reason: 'there is no Go profiler; the Stately inspector (--inspect) shows the actors' },
  'health-check-path': {
    kind: 'value',
    reason: 'the health check is always /healthz on --healthz-port',
    onlyDefault: ['/healthz'],
  },
  'health-check-timeout': { kind: 'value', reason: '/healthz answers from the actors’ state, without probing nginx' },
  'report-node-internal-ip-address': {
    kind: 'bool',
    reason: 'status addresses come from --publish-service or --publish-status-address',
  },
  'disable-leader-election': {
    kind: 'bool',
    reason: 'leader election decides only which replica writes Ingress status; it always runs',
  },
  'disable-svc-external-name': {
    kind: 'bool',
    reason: 'ExternalName Services are never proxied to (no client-controlled upstream)',
  },
  'annotations-prefix': {
    kind: 'value',
    reason:
      'only nginx.ingress.kubernetes.io/ annotations are read; Ingresses written for another prefix would be ' +
      'served without their annotations (auth among them)',
    onlyDefault: ['nginx.ingress.kubernetes.io'],
  },
  'enable-annotation-validation': {
    kind: 'bool',
    reason: 'annotation values are always validated (a bad value is a problem and an Event)',
  },
  'enable-ssl-chain-completion': { kind: 'bool', reason: 'certificate chains are served as the Secret holds them' },
  'bucket-factor': { kind: 'value', reason: NATIVE },
  'max-buckets': { kind: 'value', reason: NATIVE },
  'monitor-max-batch-size': { kind: 'value', reason: 'request metrics are summed in each nginx worker, not batched' },
  'ssl-passthrough-proxy-port': { kind: 'value', reason: NO_PORT },
  'default-server-port': { kind: 'value', reason: NO_PORT },
  'status-port': { kind: 'value', reason: `${NO_PORT}: the Lua tables come over a unix socket` },
  'stream-port': { kind: 'value', reason: NO_PORT },
  'profiler-port': { kind: 'value', reason: NO_PORT },
  'profiler-address': { kind: 'value', reason: NO_PORT },
  'internal-logger-address': { kind: 'value', reason: NO_PORT },
  'disable-catch-all': {
    kind: 'bool',
    reason:
      'an Ingress with only a default backend serves its hosts’ unmatched paths, as ingress-nginx does by default',
  },
  'disable-full-test': { kind: 'bool', reason: 'each config is checked with nginx -t before a reload' },
  'status-update-interval': {
    kind: 'value',
    reason: 'Ingress status is written when addresses or Ingresses change, not polled',
  },
  'shutdown-grace-period': { kind: 'value', reason: 'on SIGTERM nginx drains at once (see --shutdown-timeout)' },
  'post-shutdown-grace-period': { kind: 'value', reason: 'the controller exits once nginx has stopped' },
  'deep-inspect': {
    kind: 'bool',
    reason: 'every value is validated for its field and snippets pass an allow-list, always',
  },
  'dynamic-configuration-retries': {
    kind: 'value',
    reason: 'pushes to the Lua balancer are retried until they land',
  },
  'disable-sync-events': { kind: 'bool', reason: 'Events are written for problems only, not for each sync' },
  'enable-topology-aware-routing': { kind: 'bool', reason: 'topology hints are not read: every ready endpoint serves' },
  'maxmind-mirror': { kind: 'value', reason: NO_GEOIP },
  'maxmind-license-key': { kind: 'value', reason: NO_GEOIP },
  'maxmind-edition-ids': { kind: 'value', reason: NO_GEOIP },
  'maxmind-retries-count': { kind: 'value', reason: NO_GEOIP },
  'maxmind-retries-timeout': { kind: 'value', reason: NO_GEOIP },
  // klog's flags, which ingress-nginx adds to its own; --v is read as a log level (klogLevel).
  logtostderr: { kind: 'bool', reason: KLOG },
  alsologtostderr: { kind: 'bool', reason: KLOG },
  log_dir: { kind: 'value', reason: KLOG },
  log_file: { kind: 'value', reason: KLOG },
  log_file_max_size: { kind: 'value', reason: KLOG },
  stderrthreshold: { kind: 'value', reason: KLOG },
  vmodule: { kind: 'value', reason: KLOG },
  add_dir_header: { kind: 'bool', reason: KLOG },
  skip_headers: { kind: 'bool', reason: KLOG },
  skip_log_headers: { kind: 'bool', reason: KLOG },
  one_output: { kind: 'bool', reason: KLOG },
  log_backtrace_at: { kind: 'value', reason: KLOG },
};

/** klogLevel maps klog's `--v` to a log level: 0-1 info, 2-4 debug (ingress-nginx's --v=2 shows config diffs), 5+ trace. */
export function klogLevel(v: string): string | null {
  if (!/^\d{1,2}$/.test(v)) return null;
  const n = Number(v);
  return n >= 5 ? 'trace' : n >= 2 ? 'debug' : 'info';
}

/**
 * expandEnvRefs expands `$(NAME)` as the kubelet does in a container's args (the Helm chart writes
 * `--configmap=$(POD_NAMESPACE)/…`): a defined variable is replaced, an undefined one stays as written, and `$$(`
 * stands for a literal `$(`. Outside a pod, a controller started with the chart's arguments reads the same values.
 */
export function expandEnvRefs(value: string, env: NodeJS.ProcessEnv): string {
  return value.replace(/\$\$\(|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (match, name: string | undefined) => {
    if (name === undefined) return '$(';
    return env[name] ?? match;
  });
}
