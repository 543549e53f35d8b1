import type { StatusPageMode } from './http/status-page.js';
import type { BuildOptions } from './model/build-types.js';

/** ControllerConfig is everything `ingress-actors controller` was told, checked. */
export interface ControllerConfig {
  readonly kubeconfig: string | null;
  readonly watchNamespace: string | null;
  readonly build: BuildOptions;
  readonly healthzPort: number;
  /** `--healthz-host`: the address /healthz and /metrics listen on; null for all (the kubelet probes the pod IP) */
  readonly healthzHost: string | null;
  /** `--status-page` (loopback): who may read the status page and /status.json on the healthz port; off: nobody */
  readonly statusPage: StatusPageMode;
  /** syncs per second (ingress-nginx: 0.3) */
  readonly syncRateLimit: number;
  readonly nginxBinary: string | null;
  /** `--dynamic-backends` (true): the Lua balancer when nginx has it; false renders backends into nginx.conf */
  readonly dynamicBackends: boolean;
  /** `--routes-as-data` (true): with the Lua balancer, Ingress hosts without server-level settings are pushed routes */
  readonly routesAsData: boolean;
  readonly template: string;
  /** where nginx.conf, certificates and nginx's temp files live (private: see src/nginx/files.ts ConfigLayout) */
  readonly configDir: string;
  readonly drainTimeoutMs: number;
  readonly shutdownTimeoutMs: number;
  /** OTP intensity and period: more than N restarts in T seconds stops the controller */
  readonly restartIntensity: number;
  readonly restartPeriodMs: number;
  readonly inspect: boolean;
  /** `--inspect-port`: where the inspector listens (127.0.0.1); given alone, it turns the inspector on */
  readonly inspectPort: number | null;
  readonly status: StatusFlags;
  /** `--validating-webhook` and its certificate and key: the admission webhook (src/http/webhook.ts); null when off */
  readonly webhook: WebhookFlags | null;
  /** ingress-nginx's request-metric flags (src/cli/metrics-flags.ts) */
  readonly metrics: MetricsFlags;
}

/** MetricsFlags say how requests are counted for /metrics (src/http/request-metrics.ts), with ingress-nginx's names. */
export interface MetricsFlags {
  /** `--enable-metrics` (true here): count requests (needs the Lua balancer, the default mode) */
  readonly enabled: boolean;
  /** `--metrics-per-host` (true): a `host` label */
  readonly perHost: boolean;
  /** `--metrics-per-undefined-host` (false): also count requests the catch-all server answered without an Ingress */
  readonly perUndefinedHost: boolean;
  /** `--report-status-classes` (false): `2xx` instead of `200` */
  readonly statusClasses: boolean;
  /** `--time-buckets`, `--length-buckets`, `--size-buckets` */
  readonly buckets: {
    readonly time: readonly number[];
    readonly length: readonly number[];
    readonly size: readonly number[];
  };
  /** `--exclude-socket-metrics`: request metrics not exported, without the `nginx_ingress_controller_` prefix */
  readonly exclude: readonly string[];
}

/**
 * WebhookFlags are where the admission webhook listens (all addresses when no host) and where its certificate comes
 * from: PEM files (`--validating-webhook-certificate`, `--validating-webhook-key`), or a Secret the controller fills
 * itself (`selfSigned`).
 */
export interface WebhookFlags {
  readonly host?: string;
  readonly port: number;
  readonly certFile?: string;
  readonly keyFile?: string;
  readonly selfSigned?: SelfSignedWebhookFlags;
}

/** SelfSignedWebhookFlags: the controller makes the webhook's certificate and keeps the caBundle pointing at it. */
export interface SelfSignedWebhookFlags {
  /** `--validating-webhook-secret ns/name`: the Secret (ca.crt, ca.key, tls.crt, tls.key) all replicas share */
  readonly secret: { readonly namespace: string; readonly name: string };
  /** `--validating-webhook-service ns/name`: the Service the API server calls; the certificate's DNS names */
  readonly service: { readonly namespace: string; readonly name: string };
  /** `--validating-webhook-configuration NAME`: whose webhooks calling that Service get the caBundle; null: none */
  readonly configuration: string | null;
}

/** StatusFlags are the leader-election and Ingress-status flags, with ingress-nginx's names and defaults. */
export interface StatusFlags {
  /** `--publish-service ns/name`: the Service whose load-balancer addresses go into the Ingress status */
  readonly publishService: string | null;
  /** `--publish-status-address a,b`: fixed addresses instead (IPs or host names) */
  readonly publishStatusAddress: readonly string[];
  /** `--update-status` (true): the leader writes status.loadBalancer */
  readonly updateStatus: boolean;
  /** `--update-status-on-shutdown` (true): the last replica clears the addresses when it stops */
  readonly updateStatusOnShutdown: boolean;
  /** `--election-id` (ingress-controller-leader): the Lease's name */
  readonly electionId: string;
  /** `--election-ttl` (30s): the Lease duration */
  readonly electionTtlMs: number;
}
