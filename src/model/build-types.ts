/**
 * buildModel's options (the controller flags it depends on, with ingress-nginx's defaults) and its answer. Apart
 * from the builder (src/model/build.ts), so that what the builder delegates to (src/model/incremental/) and the
 * model's readers can name them without importing the builder.
 */
import type { GatewayOptions } from './gateway/input.js';
import type { GatewayRoutes } from './gateway/routes.js';
import type { ClassOptions } from './ingress-class.js';
import type { LuaSettings, NginxModules } from './machine-settings.js';
import type { NginxModel, Problem } from './nginx-model.js';
import type { StreamOptions } from './stream.js';

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
