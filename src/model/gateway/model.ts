/**
 * What the Gateway API adds to the nginx model (types only): its servers, and the routes table pushed to Lua.
 * Built by gatewayModel (src/model/gateway/nginx.ts); a leaf the nginx model's types name.
 */
import type { RouteTable } from '../pushed-tables.js';

/**
 * GatewayServer is one nginx server for a (port, hostname) that Gateway listeners serve: one `location /` whose
 * Lua router picks the route from the pushed `routes` table (src/model/gateway/nginx.ts).
 */
export interface GatewayServer {
  /** the listen address: `8080`, `127.0.0.1:8080`, or `unix:/…` (ssl-passthrough's socket for the https port) */
  readonly listen: string;
  readonly ssl: boolean;
  /**
   * h2c: HTTP/2 without TLS on this plaintext listen, when all it serves is GRPCRoutes (nginx 1.22 cannot serve
   * HTTP/1.1 and h2c on one socket, so the choice is per listen socket)
   */
  readonly h2c: boolean;
  /** PROXY protocol on this listen (use-proxy-protocol, or the ssl-passthrough socket) */
  readonly proxyProtocol: boolean;
  /** the catch-all of a port: default_server there */
  readonly defaultServer: boolean;
  /** the effective hostname (`*.example.com` for a wildcard: any number of labels, as nginx's own), `_` for any */
  readonly host: string;
  readonly serverName: string;
  /** `$ia_gateway`: the key of this server's routes in the pushed table */
  readonly key: string;
  /** the HTTPS listener's certificate, served from the pushed certificate table; null: the default one */
  readonly certificateFile: string | null;
  /**
   * an HTTPS catch-all's certificate: no SNI name selects it, so nginx.conf names its file (`ssl_certificate`);
   * null otherwise
   */
  readonly fileCertificate: string | null;
  /** `namespace/name` of the Gateways with a listener here (a comment in nginx.conf) */
  readonly gateways: readonly string[];
  /**
   * the mirror slots (`[1]`, `[1, 2]`) its routes need, as many as the route with the most RequestMirror filters
   * has; `[]` when none mirrors, so its requests start no mirror subrequests
   */
  readonly mirrorSlots: readonly number[];
  /**
   * BackendTLSPolicy profiles its routes use: a named location `@ia_btls_<key>` each, verifying with `caFile`
   * (relative to nginx.conf, or the system bundle's absolute path); absent or [] when none
   */
  readonly backendTls?: readonly {
    readonly key: string;
    readonly caFile: string;
    /** the Gateway's client certificate and key (`spec.tls.backend.clientCertificateRef`); absent: none */
    readonly certificateFile?: string;
  }[];
  /** frontend client-certificate validation (`spec.tls.frontend`): the CA file and ssl_verify_client; absent: none */
  readonly clientCa?: { readonly file: string; readonly verify: 'on' | 'optional_no_ca' };
}

/** GatewayModel is what the Gateway API adds to nginx.conf: its servers, and the routes table pushed to Lua. */
export interface GatewayModel {
  readonly servers: readonly GatewayServer[];
  readonly routes: RouteTable;
  /** the proxy-headers partial's context for the Gateway locations (Host as the router leaves it) */
  readonly proxyHeaders: { readonly host: string };
}
