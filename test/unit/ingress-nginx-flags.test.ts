/**
 * ingress-nginx's flags on this controller: every flag of its pkg/flags/flags.go (v1.15) parses, and does what it does
 * there or is reported as ignored with a reason; the Helm chart's default arguments start the controller as written.
 */
import { describe, expect, it } from 'vitest';
import { parseControllerFlags, type ParsedControllerFlags } from '../../src/cli/controller-flags.js';
import { UnsupportedFlagError } from '../../src/cli/flags.js';
import { UsageError } from '../../src/usage-error.js';
import { expandEnvRefs, INGRESS_NGINX_FLAGS, klogLevel } from '../../src/cli/ingress-nginx-flags.js';
import { chartDefaultArgs } from '../support/chart-args.js';

/** Every flag name in ingress-nginx's pkg/flags/flags.go (controller v1.15.1), with a value of its type. */
const INGRESS_NGINX: Readonly<Record<string, string>> = {
  'apiserver-host': 'https://10.0.0.1',
  'certificate-authority': '/etc/ca.crt',
  kubeconfig: '/etc/kubeconfig',
  'default-backend-service': 'ingress/default-http-backend',
  'ingress-class': 'nginx',
  'controller-class': 'k8s.io/ingress-nginx',
  'watch-ingress-without-class': 'true',
  'ingress-class-by-name': 'true',
  configmap: 'ingress/ingress-nginx-controller',
  'publish-service': 'ingress/ingress-nginx-controller',
  'sync-period': '10m',
  'watch-namespace': 'apps',
  'watch-namespace-selector': '',
  profiling: 'false',
  'default-ssl-certificate': 'ingress/default-tls',
  'health-check-path': '/healthz',
  'health-check-timeout': '10',
  'update-status': 'true',
  'election-id': 'ingress-nginx-leader',
  'election-ttl': '30s',
  'update-status-on-shutdown': 'true',
  'report-node-internal-ip-address': 'false',
  'disable-leader-election': 'false',
  'disable-svc-external-name': 'false',
  'annotations-prefix': 'nginx.ingress.kubernetes.io',
  'enable-annotation-validation': 'true',
  'enable-ssl-chain-completion': 'false',
  'sync-rate-limit': '0.3',
  'publish-status-address': '10.0.0.5',
  'enable-metrics': 'true',
  'metrics-per-host': 'true',
  'metrics-per-undefined-host': 'false',
  'report-status-classes': 'false',
  'time-buckets': '0.1,1,10',
  'length-buckets': '10,20,30',
  'size-buckets': '10,100,1000',
  'bucket-factor': '0',
  'max-buckets': '100',
  'exclude-socket-metrics': 'nginx_ingress_controller_connect_duration_seconds',
  'monitor-max-batch-size': '10000',
  'http-port': '80',
  'https-port': '443',
  'ssl-passthrough-proxy-port': '442',
  'default-server-port': '8181',
  'healthz-port': '10254',
  'healthz-host': '0.0.0.0',
  'disable-catch-all': 'false',
  'validating-webhook': ':8443',
  'validating-webhook-certificate': '/usr/local/certificates/cert',
  'validating-webhook-key': '/usr/local/certificates/key',
  'disable-full-test': 'false',
  'status-port': '10246',
  'stream-port': '10247',
  'internal-logger-address': '127.0.0.1:11514',
  'profiler-port': '10245',
  'profiler-address': '127.0.0.1',
  'status-update-interval': '60',
  'shutdown-grace-period': '0',
  'post-shutdown-grace-period': '10',
  'deep-inspect': 'true',
  'dynamic-configuration-retries': '15',
  'disable-sync-events': 'false',
  'enable-topology-aware-routing': 'false',
  'maxmind-mirror': 'http://geoip.local/',
  'maxmind-license-key': 'secret',
  'maxmind-edition-ids': 'GeoLite2-City,GeoLite2-ASN',
  'maxmind-retries-count': '1',
  'maxmind-retries-timeout': '0s',
};
/** What a later change in this project implements; until then they are unknown flags (exit 2). */
const NOT_YET_HERE = new Set(['tcp-services-configmap', 'udp-services-configmap', 'enable-ssl-passthrough', 'version']);

const config = (parsed: ParsedControllerFlags) => {
  if (!('config' in parsed)) throw new Error('no config');
  return parsed;
};

/** Flags that take effect only with others: the webhook needs its certificate and key. */
const NEEDS: Readonly<Record<string, readonly string[]>> = {
  'validating-webhook': ['--validating-webhook-certificate=/c.pem', '--validating-webhook-key=/k.pem'],
};

describe("ingress-nginx's flags", () => {
  it.each(Object.entries(INGRESS_NGINX))(
    '--%s=%s parses: implemented here, or ignored with a reason',
    (name, value) => {
      const { ignored } = config(parseControllerFlags([`--${name}=${value}`, ...(NEEDS[name] ?? [])]));
      const foreign = INGRESS_NGINX_FLAGS[name];
      if (foreign) expect(ignored).toEqual(foreign.onlyDefault ? [] : [{ flag: `--${name}`, reason: foreign.reason }]);
      else expect(ignored).toEqual([]);
    },
  );

  it('lists no flag as ignored that ingress-nginx does not have (klog aside)', () => {
    const klog = /^(v|vmodule|logtostderr|alsologtostderr|log_.*|stderrthreshold|add_dir_header|skip_.*|one_output)$/;
    for (const name of Object.keys(INGRESS_NGINX_FLAGS)) {
      if (!klog.test(name)) expect(INGRESS_NGINX[name] ?? NOT_YET_HERE.has(name) ?? name).not.toBeUndefined();
    }
  });

  it('takes Go boolean flags bare, as pflag does', () => {
    const { ignored, config: c } = config(
      parseControllerFlags(['--enable-metrics', '--profiling', '--disable-catch-all', '--metrics-per-undefined-host']),
    );
    expect(ignored.map((i) => i.flag)).toEqual(['--profiling', '--disable-catch-all']);
    // the request-metric flags are read, not ignored
    expect(c.metrics).toMatchObject({ enabled: true, perHost: true, perUndefinedHost: true });
  });

  it('refuses, with exit 1, a value it would have to ignore by serving more than asked', () => {
    expect(() => parseControllerFlags(['--annotations-prefix=custom.example.com'])).toThrow(UnsupportedFlagError);
    expect(() => parseControllerFlags(['--annotations-prefix=custom.example.com'])).toThrow(
      /--annotations-prefix=custom.example.com is not supported: only nginx.ingress.kubernetes.io\/ annotations/,
    );
    expect(() => parseControllerFlags(['--watch-namespace-selector=team=a'])).toThrow(UnsupportedFlagError);
    expect(() => parseControllerFlags(['--health-check-path=/live'])).toThrow(/always \/healthz/);
  });

  it('still refuses a flag neither ingress-nginx nor this controller has (exit 2)', () => {
    expect(() => parseControllerFlags(['--no-such-flag=1'])).toThrow(UsageError);
  });

  it.each([
    ['--election-ttl=1m30s', 90_000],
    ['--election-ttl=45', 45_000],
    ['--election-ttl=2.5s', 2_500],
    ['--drain-timeout=500ms', 500],
    ['--shutdown-timeout=1h', 3_600_000],
  ])('%s reads as a Go duration (%d ms)', (arg, ms) => {
    const { config: c } = config(parseControllerFlags([arg]));
    const read = arg.startsWith('--election-ttl')
      ? c.status.electionTtlMs
      : arg.startsWith('--drain')
        ? c.drainTimeoutMs
        : c.shutdownTimeoutMs;
    expect(read).toBe(ms);
  });

  it.each(['--election-ttl=5 minutes', '--drain-timeout=1d', '--drain-timeout=-1s', '--drain-timeout=1m30'])(
    '%s is refused, naming the flag',
    (arg) => expect(() => parseControllerFlags([arg])).toThrow(/must be a number of seconds or a duration/),
  );

  it('--version asks for the version', () => {
    expect(parseControllerFlags(['--version'])).toEqual({ version: true });
    expect(config(parseControllerFlags(['--version=false'])).ignored).toEqual([]);
  });
});

describe("the Helm chart's default arguments (charts/ingress-nginx/templates/_params.tpl, default values.yaml)", () => {
  const CHART_DEFAULTS = chartDefaultArgs();

  it('read as the kubelet expands them, with POD_NAMESPACE from the environment', () => {
    const { config: c, ignored } = config(parseControllerFlags(CHART_DEFAULTS, { POD_NAMESPACE: 'ingress-nginx' }));
    expect(c.build.configMap).toBe('ingress-nginx/ingress-nginx-controller');
    expect(c.status.publishService).toBe('ingress-nginx/ingress-nginx-controller');
    expect(c.status.electionId).toBe('ingress-nginx-leader');
    expect(c.build.ingressClass).toBe('nginx');
    expect(ignored).toEqual([]);
    expect(c.webhook).toEqual({
      port: 8443,
      certFile: '/usr/local/certificates/cert',
      keyFile: '/usr/local/certificates/key',
    });
  });

  it('name the missing variable when POD_NAMESPACE is not set (the value stays as written)', () => {
    expect(() => parseControllerFlags(CHART_DEFAULTS, {})).toThrow(
      '--configmap must be namespace/name, not "$(POD_NAMESPACE)/ingress-nginx-controller"',
    );
  });

  it('with common values too: metrics and klog verbosity', () => {
    const { ignored, config: c } = config(
      parseControllerFlags(
        [...CHART_DEFAULTS, '--enable-metrics=true', '--v=2'].filter((a) => a !== '--v=2'),
        {
          POD_NAMESPACE: 'ingress-nginx',
        },
      ),
    );
    expect(ignored.map((i) => i.flag)).not.toContain('--enable-metrics');
    expect(c.metrics.enabled).toBe(true);
  });

  it('reads the request-metric flags as ingress-nginx does, and refuses what it refuses', () => {
    const { config: c } = config(
      parseControllerFlags([
        '--enable-metrics=false',
        '--metrics-per-host=false',
        '--report-status-classes',
        '--time-buckets=0.1,0.5,1',
        '--length-buckets=100,1e3',
        '--exclude-socket-metrics=nginx_ingress_controller_requests,bytes_sent',
      ]),
    );
    expect(c.metrics).toEqual({
      enabled: false,
      perHost: false,
      perUndefinedHost: false,
      statusClasses: true,
      buckets: {
        time: [0.1, 0.5, 1],
        length: [100, 1000],
        size: [10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000],
      },
      exclude: ['requests', 'bytes_sent'],
    });
    // as ingress-nginx's flag parsing: undefined hosts need per-host metrics
    expect(() => parseControllerFlags(['--metrics-per-host=false', '--metrics-per-undefined-host'])).toThrow(
      /--metrics-per-undefined-host=true must be passed with --metrics-per-host=true/,
    );
    // Prometheus wants increasing finite bounds
    for (const bad of ['1,0.5', '0.1,,1', 'x', '', '1,1', 'Infinity'])
      expect(() => parseControllerFlags([`--time-buckets=${bad}`])).toThrow(UsageError);
  });
});

describe('expandEnvRefs and klogLevel', () => {
  it.each([
    ['$(POD_NAMESPACE)/x', 'ns/x'],
    ['$(UNSET)/x', '$(UNSET)/x'],
    ['$$(POD_NAMESPACE)', '$(POD_NAMESPACE)'],
    ['$(POD_NAME)-$(POD_NAMESPACE)', 'pod-1-ns'],
    ['$POD_NAMESPACE', '$POD_NAMESPACE'],
  ])('%s → %s', (value, expected) => {
    expect(expandEnvRefs(value, { POD_NAMESPACE: 'ns', POD_NAME: 'pod-1' })).toBe(expected);
  });

  it.each([
    ['0', 'info'],
    ['1', 'info'],
    ['2', 'debug'],
    ['4', 'debug'],
    ['5', 'trace'],
    ['10', 'trace'],
    ['x', null],
    ['-1', null],
  ])('--v=%s → %s', (v, level) => expect(klogLevel(v)).toBe(level));
});
