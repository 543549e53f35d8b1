/**
 * buildModel's options (the controller flags it depends on, its parts for the class filter, the stream block and the
 * Gateway API, and ingress-nginx's defaults) and its answer (types, and the defaults). A leaf apart from the builder
 * (src/model/build.ts) and the steps it calls, so that they and the model's readers name these without importing it.
 */
import type { GatewayRoutes } from './gateway/routes.js';
import type { LuaSettings, NginxModules, StreamSettings } from './machine-settings.js';
import type { NginxModel, Problem } from './nginx-model.js';

/** ClassOptions are the flags that decide which Ingresses are this controller's. */
export interface ClassOptions {
  /** `--ingress-class` */
  readonly ingressClass: string;
  /** `--controller-class` */
  readonly controllerClass: string;
  /** `--watch-ingress-without-class` */
  readonly watchIngressWithoutClass: boolean;
}

/** StreamOptions are the flags the stream block depends on (a part of BuildOptions). */
export interface StreamOptions {
  /** `--tcp-services-configmap ns/name` */
  readonly tcpServicesConfigMap?: string;
  /** `--udp-services-configmap ns/name` */
  readonly udpServicesConfigMap?: string;
  /** `--enable-ssl-passthrough` */
  readonly enableSslPassthrough?: boolean;
  /** the module paths and the socket folder (DEFAULT_STREAM_SETTINGS when absent) */
  readonly stream?: StreamSettings;
  /** the controller's own ports besides HTTP and HTTPS (healthz, inspector): no TCP or UDP service may take them */
  readonly reservedPorts?: readonly number[];
  readonly httpPort: number;
  readonly httpsPort: number;
}

/** GatewayOptions are the flags the Gateway API needs (`--gateway-controller-name`, `--gateway-addresses`). */
export interface GatewayOptions {
  readonly controllerName: string;
  /** `--gateway-addresses`: the pool each accepted Gateway gets its own address from; absent: one shared address */
  readonly addresses?: readonly string[];
}

/** BuildOptions are the controller flags buildModel depends on. */
export interface BuildOptions extends ClassOptions, StreamOptions {
  /** `--configmap ns/name` */
  readonly configMap?: string;
  /** `--default-ssl-certificate ns/name` */
  readonly defaultSslCertificate?: string;
  /** `--default-backend-service ns/name`: unknown hosts and unmatched paths go there instead of a 404 */
  readonly defaultBackendService?: string;
  readonly httpPort: number;
  readonly httpsPort: number;
  /** the one IP nginx listens on (the demo's 127.0.0.1); all addresses when absent, as ingress-nginx */
  readonly listenAddress?: string;
  /** nameservers nginx asks for names it looks up at run time (auth-url): IP addresses, from /etc/resolv.conf */
  readonly resolvers?: readonly string[];
  /**
   * the Lua balancer (`--dynamic-backends`, on when nginx has the module): backends without endpoints still
   * proxy, and nginx.conf names no endpoint and no host certificate. A memo serves one value of it.
   */
  readonly dynamic?: LuaSettings;
  /** the optional modules this nginx has (src/nginx/modules.ts): snippets may use what they give */
  readonly modules?: NginxModules;
  /**
   * absolute path of the unix socket nginx serves stub_status on for /metrics, in the private config folder (a path
   * of the controller's choosing); none when absent
   */
  readonly statusSocket?: string;
  /**
   * where ModSecurity writes its audit log: the FIFO the controller reads in its private config folder
   * (src/nginx/waf-audit.ts); absent: /dev/stderr (`render`, whose nginx has a real stderr)
   */
  readonly wafAuditLog?: string;
  /** the Gateway API (`--enable-gateway-api`, `--gateway-controller-name`); absent: off */
  readonly gateway?: GatewayOptions;
}

/** defaultBuildOptions are ingress-nginx's flag defaults. */
export const defaultBuildOptions: BuildOptions = Object.freeze({
  ingressClass: 'nginx',
  controllerClass: 'k8s.io/ingress-nginx',
  watchIngressWithoutClass: false,
  httpPort: 80,
  httpsPort: 443,
});

/** BuildResult is buildModel's answer: the model and what was left out of it and why. */
export interface BuildResult {
  readonly model: NginxModel;
  readonly problems: readonly Problem[];
  /** the Gateway API's routes and status (src/model/gateway/), or null when BuildOptions.gateway is absent */
  readonly gateway: GatewayRoutes | null;
}
