/**
 * The tables the controller pushes to nginx's Lua balancer over the control socket, so that an
 * endpoint change or a renewed certificate needs no reload. The model builds them; the nginx
 * actor pushes them (src/nginx/control.ts); lua/ingress_actors/ reads them. Every string in
 * them passed the model's validators; Lua checks their shape again and treats them as data only.
 */

/** BalanceMethod is how the balancer picks a peer: ingress-nginx's load-balance values, plus chash for hashing. */
export type BalanceMethod = 'round_robin' | 'ewma' | 'chash';

/** BackendPeer is one endpoint: an IPv4 or IPv6 address (no brackets) and a port. */
export interface BackendPeer {
  readonly address: string;
  readonly port: number;
}

/** Backend is one upstream as the balancer sees it; `name` is what nginx.conf sets `$proxy_upstream_name` to. */
export interface Backend {
  readonly name: string;
  readonly balance: BalanceMethod;
  /** for chash: an nginx variable expression (`$request_uri`, `$ia_aff_route`), evaluated by Lua per request */
  readonly hashKey: string | null;
  /** sorted; empty: the balancer answers 503 */
  readonly endpoints: readonly BackendPeer[];
}

/** BackendTable is what `POST /backends` carries. */
export interface BackendTable {
  /** a digest of the backends: nginx reports the version it holds */
  readonly version: string;
  readonly backends: readonly Backend[];
}

/** ServedCertificate is a TLS host's certificate chain and key, PEM, served by `ssl_certificate_by_lua`. */
export interface ServedCertificate {
  /** the Ingress host: `a.example.com`, or `*.example.com` for exactly one more label */
  readonly host: string;
  readonly cert: string;
  readonly key: string;
}

/** CertificateTable is what `POST /certificates` carries. */
export interface CertificateTable {
  readonly version: string;
  readonly certificates: readonly ServedCertificate[];
}

/** DynamicTables are both, as one `nginx.reload` or push carries them. */
export interface DynamicTables {
  readonly backends: BackendTable;
  readonly certificates: CertificateTable;
}

/** CONTROL_SOCKET is the control channel's unix socket, relative to the config folder (private to the controller). */
export const CONTROL_SOCKET = 'control.sock';

/** CONTROL_TOKEN_ENV is the environment variable the nginx master gets the per-start token in (never on disk). */
export const CONTROL_TOKEN_ENV = 'INGRESS_ACTORS_CONTROL_TOKEN';

/** CONTROL_TOKEN_HEADER carries the token on every control request. */
export const CONTROL_TOKEN_HEADER = 'x-ingress-actors-token';
