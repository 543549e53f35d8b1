import { parseArgs } from 'node:util';
import { defaultBuildOptions, type BuildOptions } from '../model/build.js';
import { checkDnsLabel, checkObjectName } from '../model/validate.js';
import { DEFAULT_TEMPLATE } from '../render/load.js';
import { classFlags, parsePort, UsageError } from './flags.js';

/** ControllerConfig is everything `ingress-actors controller` was told, checked. */
export interface ControllerConfig {
  readonly kubeconfig: string | null;
  readonly watchNamespace: string | null;
  readonly build: BuildOptions;
  readonly healthzPort: number;
  /** syncs per second (ingress-nginx: 0.3) */
  readonly syncRateLimit: number;
  readonly nginxBinary: string | null;
  readonly template: string;
  /** where nginx.conf, certificates and nginx's temp files live */
  readonly configDir: string;
  readonly drainTimeoutMs: number;
  readonly shutdownTimeoutMs: number;
  /** OTP intensity and period: more than N restarts in T seconds stops the controller */
  readonly restartIntensity: number;
  readonly restartPeriodMs: number;
  readonly inspect: boolean;
}

export const CONTROLLER_USAGE = `Usage: ingress-actors controller [flags]

  --kubeconfig FILE                 (in-cluster config when absent)
  --ingress-class NAME              (nginx)          --controller-class NAME (k8s.io/ingress-nginx)
  --watch-ingress-without-class     --watch-namespace NS (all)
  --configmap ns/name               --default-ssl-certificate ns/name
  --default-backend-service ns/name (unknown hosts and unmatched paths; else a 404)
  --http-port N (80)                --https-port N (443)         --healthz-port N (10254)
  --sync-rate-limit R (0.3)         --nginx-binary PATH (env NGINX_BINARY, else nginx)
  --template FILE                   --config-dir DIR (/tmp/ingress-actors)
  --drain-timeout S (5)             --shutdown-timeout S (30)
  --restart-intensity N (5)         --restart-period S (30)      --inspect`;

/** Flags of ingress-nginx this controller does not implement yet: accepted with a warning, never silently. */
export const NOT_YET = ['publish-service', 'publish-status-address', 'update-status', 'election-id'] as const;

function ref(flag: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const [ns, name, ...rest] = value.split('/');
  if (rest.length > 0 || !checkDnsLabel(ns).ok || !checkObjectName(name).ok) {
    throw new UsageError(`${flag} must be namespace/name, not ${JSON.stringify(value)}`);
  }
  return value;
}

function seconds(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback * 1000;
  const n = Number(value.replace(/s$/, ''));
  if (!Number.isFinite(n) || n < 0) throw new UsageError(`${flag} must be a number of seconds, not ${JSON.stringify(value)}`);
  return n * 1000;
}

/** parseControllerFlags reads the controller's flags (ingress-nginx's names) into a ControllerConfig. */
export function parseControllerFlags(argv: string[]): { config: ControllerConfig; ignored: string[] } | { help: true } {
  const { values } = parseArgs({
    args: argv,
    options: {
      kubeconfig: { type: 'string' },
      'watch-namespace': { type: 'string' },
      configmap: { type: 'string' },
      'default-ssl-certificate': { type: 'string' },
      'default-backend-service': { type: 'string' },
      'http-port': { type: 'string' },
      'https-port': { type: 'string' },
      'healthz-port': { type: 'string' },
      'sync-rate-limit': { type: 'string' },
      'nginx-binary': { type: 'string' },
      template: { type: 'string' },
      'config-dir': { type: 'string' },
      'drain-timeout': { type: 'string' },
      'shutdown-timeout': { type: 'string' },
      'restart-intensity': { type: 'string' },
      'restart-period': { type: 'string' },
      inspect: { type: 'boolean' },
      ...classFlags,
      ...Object.fromEntries(NOT_YET.map((flag) => [flag, { type: 'string' as const }])),
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return { help: true };
  const rate = values['sync-rate-limit'] === undefined ? 0.3 : Number(values['sync-rate-limit']);
  if (!(rate > 0)) throw new UsageError(`--sync-rate-limit must be a positive number of syncs per second, not ${JSON.stringify(values['sync-rate-limit'])}`);
  const intensity = values['restart-intensity'] === undefined ? 5 : Number(values['restart-intensity']);
  if (!Number.isInteger(intensity) || intensity < 0) throw new UsageError('--restart-intensity must be a whole number');
  const namespace = values['watch-namespace'];
  if (namespace !== undefined && !checkDnsLabel(namespace).ok) throw new UsageError(`--watch-namespace ${JSON.stringify(namespace)} is not a namespace name`);
  const configMap = ref('--configmap', values.configmap);
  const defaultSslCertificate = ref('--default-ssl-certificate', values['default-ssl-certificate']);
  const defaultBackendService = ref('--default-backend-service', values['default-backend-service']);
  const build: BuildOptions = {
    ingressClass: values['ingress-class'] ?? defaultBuildOptions.ingressClass,
    controllerClass: values['controller-class'] ?? defaultBuildOptions.controllerClass,
    watchIngressWithoutClass: values['watch-ingress-without-class'] ?? false,
    httpPort: parsePort('--http-port', values['http-port'], 80),
    httpsPort: parsePort('--https-port', values['https-port'], 443),
    ...(configMap ? { configMap } : {}),
    ...(defaultSslCertificate ? { defaultSslCertificate } : {}),
    ...(defaultBackendService ? { defaultBackendService } : {}),
  };
  return {
    ignored: NOT_YET.filter((flag) => (values as Record<string, unknown>)[flag] !== undefined).map((f) => `--${f}`),
    config: {
      kubeconfig: values.kubeconfig ?? null,
      watchNamespace: namespace ?? null,
      build,
      healthzPort: parsePort('--healthz-port', values['healthz-port'], 10254),
      syncRateLimit: rate,
      nginxBinary: values['nginx-binary'] ?? null,
      template: values.template ?? DEFAULT_TEMPLATE,
      configDir: values['config-dir'] ?? '/tmp/ingress-actors',
      drainTimeoutMs: seconds('--drain-timeout', values['drain-timeout'], 5),
      shutdownTimeoutMs: seconds('--shutdown-timeout', values['shutdown-timeout'], 30),
      restartIntensity: intensity,
      restartPeriodMs: seconds('--restart-period', values['restart-period'], 30),
      inspect: values.inspect ?? false,
    },
  };
}
