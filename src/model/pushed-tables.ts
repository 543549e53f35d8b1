/**
 * The shapes of the tables the controller pushes to nginx's Lua balancer over the control socket (types only): the
 * backends, the certificates and the routes, and all three as one push carries them. The model builds them
 * (src/model/dynamic-tables.ts, src/model/gateway/nginx.ts), src/nginx/control.ts pushes them, lua/ingress_actors/
 * reads them; src/model/table-schema.ts bounds them. A leaf: the nginx model's types name the routes table.
 */
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
  | { readonly type: 'RequestMirror'; readonly backend?: string; readonly percent: number }
  /** a CORS filter as read (src/model/gateway/types.ts CorsPolicy): the router answers preflights itself */
  | {
      readonly type: 'CORS';
      readonly allowOrigins: readonly string[];
      readonly allowCredentials: boolean;
      readonly allowMethods: readonly string[];
      readonly allowHeaders: readonly string[];
      readonly exposeHeaders: readonly string[];
      readonly maxAge: number;
    };

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
  readonly backends: readonly {
    readonly backend?: string;
    readonly weight: number;
    /** the backendRef's own RequestHeaderModifier filters, applied after the route's when it is picked */
    readonly filters?: readonly ({ readonly type: 'RequestHeaderModifier' } & RouteHeaderModifier)[];
    /** BackendTLSPolicy: the profile (`@ia_btls_<tls>` of the server, its CA) and the name sent and verified */
    readonly tls?: string;
    readonly sni?: string;
  }[];
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
  /**
   * an HTTPS server's listener hostname ('' for none) and those of every HTTPS listener on its socket: the router
   * answers 421 when the TLS server name picks another listener than the Host header did
   */
  readonly tls?: { readonly listener: string; readonly listeners: readonly string[] };
}

/** RouteTable is what `POST /routes` carries: the Gateway API routes, served by lua/ingress_actors/router.lua. */
export interface RouteTable {
  readonly version: string;
  readonly servers: readonly RouteServer[];
}

/**
 * IngressRouteEntryData is one location of an Ingress host as the shared server's router reads it
 * (lua/ingress_actors/ingress_router.lua): how it matches, the profile (`@ia_p_<profile>`, a named location of
 * nginx.conf) it jumps to, and the values it sets per request. Optional fields are absent, never null.
 */
export interface IngressRouteEntryData {
  readonly kind: 'exact' | 'prefix' | 'regex' | 'iregex';
  readonly path: string;
  /** 32 lowercase hex digits: the location profile's key */
  readonly profile: string;
  /** the request metrics' route id (`$ia_route`) */
  readonly route?: string;
  /** `$proxy_upstream_name`: the Backend the balancer picks a peer of */
  readonly upstream?: string;
  /** what an error backend is told: `$namespace`, `$ingress_name`, `$service_name`, `$service_port` */
  readonly info?: {
    readonly namespace: string;
    readonly ingressName: string;
    readonly serviceName: string;
    readonly servicePort: string;
  };
  /**
   * the location's client_max_body_size in bytes (absent: no limit): nginx checks a request's Content-Length against
   * the location it matched, which in the shared server is the router's, so the router checks it for the profile
   */
  readonly maxBodySize?: number;
  /** nginx's auto_redirect: the path without its trailing `/` answers 301 to the path */
  readonly autoRedirect: boolean;
  /** an auth-url subrequest's location: a client's request for it answers 404 */
  readonly internal: boolean;
}

/** IngressHostData is one host's entries (the shared server's routes for it), in its rendered locations' order. */
export interface IngressHostData {
  /** a host name, `*.` and a domain (one label), or `_` (unknown hosts) */
  readonly host: string;
  readonly entries: readonly IngressRouteEntryData[];
}

/**
 * IngressRouteTable is the Ingress hosts the shared server routes (issue 29, routes as data). Pushed as deltas
 * (`POST /ingress-routes`: the hosts whose JSON differs from what nginx holds, and the hosts gone), so a push costs
 * what changed. `json` is each host's entry as sent, made once per host.
 */
export interface IngressRouteTable {
  readonly version: string;
  /** by host: the host's JSON as pushed */
  readonly hosts: ReadonlyMap<string, string>;
  /** the profiles nginx.conf has as named locations: an entry naming another waits for the reload that brings it */
  readonly profiles: ReadonlySet<string>;
}

/** DynamicTables are all of them, as one `nginx.reload` or push carries them. */
export interface DynamicTables {
  readonly backends: BackendTable;
  readonly certificates: CertificateTable;
  readonly routes: RouteTable;
  /** the shared server's Ingress routes; absent without routes as data */
  readonly ingress?: IngressRouteTable;
}
