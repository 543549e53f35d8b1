/**
 * The tables the controller pushes to nginx's Lua balancer over the control socket, so that an
 * endpoint change or a renewed certificate needs no reload. The model builds them; the nginx
 * actor pushes them (src/nginx/control.ts); lua/ingress_actors/ reads them. Every string in
 * them passed the model's validators; Lua checks their shape again and treats them as data only.
 */
import { createHash } from 'node:crypto';

/**
 * BalanceMethod is how the balancer picks a peer: ingress-nginx's load-balance values, chash for upstream-hash-by,
 * and sticky for cookie affinity (chash for a cookie's first request; then the peer it reached, remembered by nginx,
 * for as long as that peer stays an endpoint, whatever other endpoints come and go).
 */
export type BalanceMethod = 'round_robin' | 'ewma' | 'chash' | 'sticky';

/** BackendPeer is one endpoint: an IPv4 or IPv6 address (no brackets) and a port. */
export interface BackendPeer {
  readonly address: string;
  readonly port: number;
}

/** Backend is one upstream as the balancer sees it; `name` is what nginx.conf sets `$proxy_upstream_name` to. */
export interface Backend {
  readonly name: string;
  readonly balance: BalanceMethod;
  /** for chash and sticky: an nginx variable expression (`$request_uri`, `$ia_aff_route`), evaluated per request */
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

/**
 * ServedCertificate is a Secret's certificate chain and key, PEM, once, and what is served with it by
 * `ssl_certificate_by_lua`: Ingress TLS hosts, found by the handshake's SNI, and Gateway HTTPS servers, found by
 * the server's key. A Gateway server asks for its own key only (nginx has picked the server by SNI on its address and
 * port), so a Gateway on its own address never serves another Gateway's or an Ingress's certificate for the same
 * hostname. One entry per Secret: a table's size does not grow with how many hosts share a certificate.
 */
export interface ServedCertificate {
  /** the Secret's `namespace/name` (the entry's key; nginx names it when it refuses the entry) */
  readonly secret: string;
  readonly cert: string;
  readonly key: string;
  /** Ingress hosts: `a.example.com`, or `*.example.com` for exactly one more label */
  readonly hosts: readonly string[];
  /** Gateway servers' keys, as in the routes table: `[<address>:]<port>/<hostname>` */
  readonly servers: readonly string[];
}

/** PemPair is a certificate file's PEM split into a table entry's chain and key. */
export interface PemPair {
  readonly cert: string;
  readonly key: string;
}

/**
 * servedNames are what a certificate table serves: every host, then every Gateway server as `server <key>` (a host and
 * a server key are two separate namespaces).
 */
export function servedNames(table: CertificateTable): string[] {
  return [
    ...table.certificates.flatMap((c) => c.hosts),
    ...table.certificates.flatMap((c) => c.servers.map((key) => `server ${key}`)),
  ];
}

/** CertificateTable is what `POST /certificates` carries. */
export interface CertificateTable {
  readonly version: string;
  readonly certificates: readonly ServedCertificate[];
}

/** RouteHeaderModifier is a RequestHeaderModifier or ResponseHeaderModifier filter's lists. */
export interface RouteHeaderModifier {
  readonly set: readonly { readonly name: string; readonly value: string }[];
  readonly add: readonly { readonly name: string; readonly value: string }[];
  readonly remove: readonly string[];
}

/** RoutePathModifier is a redirect's or rewrite's path change. */
export interface RoutePathModifier {
  readonly type: 'ReplaceFullPath' | 'ReplacePrefixMatch';
  readonly value: string;
}

/** RouteFilterEntry is one filter of a rule, as lua/ingress_actors/router.lua applies it. */
export type RouteFilterEntry =
  | ({ readonly type: 'RequestHeaderModifier' } & RouteHeaderModifier)
  | ({ readonly type: 'ResponseHeaderModifier' } & RouteHeaderModifier)
  | {
      readonly type: 'RequestRedirect';
      readonly scheme?: 'http' | 'https';
      readonly hostname?: string;
      readonly port?: number;
      readonly path?: RoutePathModifier;
      readonly statusCode: number;
    }
  | { readonly type: 'URLRewrite'; readonly hostname?: string; readonly path?: RoutePathModifier }
  /**
   * backend: the Backend's name, absent when the mirror's backendRef did not resolve (nothing is mirrored); percent:
   * the share of requests mirrored (0-100). The n-th mirror of a rule goes through nginx.conf's n-th mirror slot.
   */
  | { readonly type: 'RequestMirror'; readonly backend?: string; readonly percent: number };

/** RouteValueMatch is a header or query parameter match. */
export interface RouteValueMatch {
  readonly type: 'Exact' | 'RegularExpression';
  readonly name: string;
  readonly value: string;
}

/** RouteEntry is one match of one HTTPRoute rule, in the order the router tries them. */
export interface RouteEntry {
  /** `namespace/name#rule` of the HTTPRoute, for logs */
  readonly route: string;
  readonly path: { readonly type: 'Exact' | 'PathPrefix' | 'RegularExpression'; readonly value: string };
  readonly method?: string;
  /** a GRPCRoute's: matches gRPC calls only (content-type application/grpc…), passed by grpc_pass */
  readonly grpc?: true;
  readonly headers: readonly RouteValueMatch[];
  readonly queryParams: readonly RouteValueMatch[];
  readonly filters: readonly RouteFilterEntry[];
  /** weighted; a backend without `backend` is one that did not resolve: its share is answered 500 */
  readonly backends: readonly { readonly backend?: string; readonly weight: number }[];
  /** milliseconds; absent: not set; 0: no timeout */
  readonly timeouts: { readonly request?: number; readonly backendRequest?: number };
}

/** RouteServer is one Gateway server of nginx.conf (one port and hostname) and the routes it tries. */
export interface RouteServer {
  /** what nginx.conf sets `$ia_gateway` to in that server: `<port>/<hostname or _>` */
  readonly key: string;
  /** the Gateway listener's port, the redirect port when a redirect names neither port nor scheme */
  readonly port: number;
  readonly routes: readonly RouteEntry[];
}

/** RouteTable is what `POST /routes` carries: the Gateway API routes, served by lua/ingress_actors/router.lua. */
export interface RouteTable {
  readonly version: string;
  readonly servers: readonly RouteServer[];
}

/** An empty RouteTable, pushed when no Gateway route is served. */
export const EMPTY_ROUTES: RouteTable = Object.freeze({ version: 'empty', servers: [] });

/** routeTableOf gives the servers their version. */
export function routeTableOf(servers: readonly RouteServer[]): RouteTable {
  return servers.length === 0 ? EMPTY_ROUTES : { version: versionOf(servers), servers };
}

/** DynamicTables are all three, as one `nginx.reload` or push carries them. */
export interface DynamicTables {
  readonly backends: BackendTable;
  readonly certificates: CertificateTable;
  readonly routes: RouteTable;
}

/** CONTROL_SOCKET is the control channel's unix socket, relative to the config folder (private to the controller). */
export const CONTROL_SOCKET = 'control.sock';

/** CONTROL_TOKEN_ENV is the environment variable the nginx master gets the per-start token in (never on disk). */
export const CONTROL_TOKEN_ENV = 'INGRESS_ACTORS_CONTROL_TOKEN';

/** CONTROL_TOKEN_HEADER carries the token on every control request. */
export const CONTROL_TOKEN_HEADER = 'x-ingress-actors-token';

/** versionOf is a table's version: a digest of its content, which nginx reports back. */
export function versionOf(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 32);
}

/** mostMirrors is how many `mirror` slots routes need: the most RequestMirror filters one of them has. */
export function mostMirrors(routes: readonly { readonly filters: readonly { readonly type: string }[] }[]): number {
  return routes.reduce((n, r) => Math.max(n, r.filters.filter((f) => f.type === 'RequestMirror').length), 0);
}

/**
 * tablesForReload are the tables pushed just before a reload is signalled: the new ones, plus the entries only
 * the old ones had, so that old workers (still serving the old config) and new workers both find theirs.
 * The version differs from the new tables', so the exact ones follow once the reload is confirmed.
 * A Gateway server whose routes need more mirror slots than the running nginx.conf gave it keeps its old routes
 * until then: its new ones take effect with the reload that brings their mirrors, not before without them.
 */
export function tablesForReload(next: DynamicTables, previous: DynamicTables | null): DynamicTables {
  if (previous === null) return next;
  const names = new Set(next.backends.backends.map((b) => b.name));
  const keys = new Set(next.routes.servers.map((s) => s.key));
  const before = new Map((previous.routes?.servers ?? []).map((s) => [s.key, s]));
  let held = false;
  const kept = next.routes.servers.map((s) => {
    const old = before.get(s.key);
    if (old === undefined || mostMirrors(s.routes) <= mostMirrors(old.routes)) return s;
    held = true;
    return old;
  });
  const servers = [...kept, ...(previous.routes?.servers ?? []).filter((s) => !keys.has(s.key))];
  // an old Secret's entry stays for the old workers, with what no new entry serves (each host and key once)
  const secrets = new Set(next.certificates.certificates.map((c) => c.secret));
  const taken = new Set(servedNames(next.certificates));
  const backends = [...next.backends.backends, ...previous.backends.backends.filter((b) => !names.has(b.name))];
  const certificates = [
    ...next.certificates.certificates,
    ...previous.certificates.certificates
      .filter((c) => !secrets.has(c.secret))
      .map((c) => ({
        ...c,
        hosts: c.hosts.filter((h) => !taken.has(h)),
        servers: c.servers.filter((k) => !taken.has(`server ${k}`)),
      }))
      .filter((c) => c.hosts.length > 0 || c.servers.length > 0),
  ];
  return {
    backends:
      backends.length === next.backends.backends.length
        ? next.backends
        : { version: `u-${next.backends.version}`, backends },
    certificates:
      certificates.length === next.certificates.certificates.length
        ? next.certificates
        : { version: `u-${next.certificates.version}`, certificates },
    routes:
      servers.length === next.routes.servers.length && !held
        ? next.routes
        : { version: `u-${next.routes.version}`, servers },
  };
}
