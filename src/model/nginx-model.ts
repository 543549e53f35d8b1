/**
 * The nginx model: what nginx.conf will say, already decided and validated. The template only
 * formats it. Absent values are `null`, never missing, so the template can run in strict mode.
 */

import type { UriEscape } from './escape-uri.js';
import type { GatewayModel } from './gateway/model.js';
import type { LuaSettings } from './machine-settings.js';

/** Problem is one thing wrong with one object: it names the object and the field. */
export interface Problem {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly field: string;
  readonly message: string;
}

/** RiskLevel is ingress-nginx's annotation risk scale, lowest first. */
export type RiskLevel = 'Low' | 'Medium' | 'High' | 'Critical';

/** GlobalConfig holds the ConfigMap keys, validated, with ingress-nginx's defaults. */
export interface GlobalConfig {
  readonly workerProcesses: string;
  readonly errorLogLevel: string;
  readonly maxWorkerConnections: number;
  readonly clientHeaderBufferSize: string;
  readonly largeClientHeaderBuffers: { readonly number: number; readonly size: string };
  /** both set or both null: nginx wants the pair */
  readonly http2MaxFieldSize: string | null;
  readonly http2MaxHeaderSize: string | null;
  readonly serverNameHashMaxSize: number;
  readonly serverNameHashBucketSize: number;
  readonly mapHashBucketSize: number;
  readonly proxyBodySize: string;
  readonly proxyConnectTimeout: string;
  readonly proxyReadTimeout: string;
  readonly proxySendTimeout: string;
  readonly keepAlive: string;
  readonly sslProtocols: readonly string[];
  readonly sslCiphers: string;
  readonly sslRedirect: boolean;
  readonly forceSslRedirect: boolean;
  readonly hsts: boolean;
  readonly hstsMaxAge: number;
  readonly hstsIncludeSubdomains: boolean;
  readonly hstsPreload: boolean;
  /** snippet annotations are refused unless this is true (ingress-nginx's default is false) */
  readonly allowSnippetAnnotations: boolean;
  /** annotations riskier than this leave their Ingress out (ingress-nginx's default is High) */
  readonly annotationsRiskLevel: RiskLevel;
  /** may annotations name Secrets in other namespaces (`auth-secret: ns/name`) */
  readonly allowCrossNamespaceResources: boolean;
  readonly limitReqStatusCode: number;
  readonly limitConnStatusCode: number;
  /** `round_robin`, or `least_conn` (what `ewma` maps to without Lua) */
  readonly loadBalance: 'round_robin' | 'least_conn';
  readonly useForwardedHeaders: boolean;
  /** take the client address from forwardedForHeader even without use-forwarded-headers */
  readonly enableRealIp: boolean;
  /** every connection starts with a PROXY protocol header (a TCP load balancer in front), which names the client */
  readonly useProxyProtocol: boolean;
  /** the header naming the client address, with use-forwarded-headers or enable-real-ip */
  readonly forwardedForHeader: string;
  /** the proxies trusted to name the client address in forwardedForHeader */
  readonly proxyRealIpCidr: readonly string[];
  /** compress answers with gzip (use-gzip), at gzipLevel, from gzipMinLength bytes, for gzipTypes */
  readonly useGzip: boolean;
  readonly gzipLevel: number;
  readonly gzipMinLength: number;
  readonly gzipTypes: readonly string[];
  readonly logFormatUpstream: string;
  /** `log-format-escape-json`: log_format's `escape=json` (variables escaped for a JSON string) */
  readonly logFormatEscapeJson: boolean;
  /** `log-format-escape-none`: `escape=none`, which wins over escape-json as in ingress-nginx */
  readonly logFormatEscapeNone: boolean;
  /** null when disable-access-log (or disable-http-access-log) is set; `/dev/stdout` by default */
  readonly accessLogPath: string | null;
  /** `http-access-log-path`: where the http block's access log goes instead of accessLogPath (null: accessLogPath) */
  readonly httpAccessLogPath: string | null;
  /** worker_shutdown_timeout: how long old workers may keep connections open after a reload */
  readonly workerShutdownTimeout: string;
  /** server_tokens: the nginx version in the Server header and error pages (server-tokens) */
  readonly showServerTokens: boolean;
  /** keepalive_requests towards clients (keep-alive-requests) */
  readonly keepAliveRequests: number;
  /** keepalive in each upstream block; 0 turns upstream keep-alive off (upstream-keepalive-connections) */
  readonly upstreamKeepaliveConnections: number;
  readonly upstreamKeepaliveTime: string;
  readonly upstreamKeepaliveTimeout: string;
  readonly upstreamKeepaliveRequests: number;
  /** proxy_buffer_size and proxy_buffers at the http level (proxy-buffer-size, proxy-buffers-number) */
  readonly proxyBufferSize: string;
  readonly proxyBuffersNumber: number;
  /** gzip_disable: `msie6` or one User-Agent regular expression of the safe subset, or null */
  readonly gzipDisable: string | null;
  /** ssl_session_tickets (ingress-nginx's default: off) */
  readonly sslSessionTickets: boolean;
  /** brotli compression (enable-brotli), when nginx has Debian's brotli module */
  readonly enableBrotli: boolean;
  readonly brotliLevel: number;
  readonly brotliMinLength: number;
  readonly brotliTypes: readonly string[];
  /** `ns/name` of the ConfigMap of response headers (add-headers), or null */
  readonly addHeaders: string | null;
  /** `ns/name` of the ConfigMap of request headers for the backends (proxy-set-headers), or null */
  readonly proxySetHeaders: string | null;
  /** server-snippet and http-snippet: allow-listed directives, each argument printed through `q` */
  readonly serverSnippet: readonly SnippetDirective[] | null;
  readonly httpSnippet: readonly SnippetDirective[] | null;
  /** enable-modsecurity: ModSecurity in every Ingress location (an Ingress's enable-modsecurity "false" opts out) */
  readonly enableModsecurity: boolean;
  /** enable-owasp-modsecurity-crs: the OWASP Core Rule Set wherever ModSecurity is on */
  readonly enableOwaspModsecurityCrs: boolean;
  /** modsecurity-snippet: allow-listed ModSecurity directives for every rule set (src/model/modsecurity-policy.ts) */
  readonly modsecuritySnippet: readonly ModSecurityDirective[] | null;
  /** enable-opentelemetry: a server span for every request of every location (the annotation overrides it) */
  readonly enableOpentelemetry: boolean;
  /** opentelemetry-trust-incoming-span: a valid incoming `traceparent` is the span's parent (the annotation overrides it) */
  readonly opentelemetryTrustIncomingSpan: boolean;
  /** opentelemetry-operation-name: the span name, with OPERATION_NAME_VARIABLES replaced; '' names it by its path */
  readonly opentelemetryOperationName: string;
  /** otlp-collector-host: where the controller exports spans (OTLP/HTTP); '' exports none (they are counted dropped) */
  readonly otlpCollectorHost: string;
  /** otlp-collector-port: the collector's OTLP/HTTP port */
  readonly otlpCollectorPort: number;
  /** otel-service-name: the spans' resource `service.name` */
  readonly otelServiceName: string;
  readonly otelSampler: OtelSampler;
  /** otel-sampler-ratio: the share TraceIdRatioBased samples, 0 to 1 */
  readonly otelSamplerRatio: number;
  /** otel-sampler-parent-based: a trusted parent's sampled flag decides, the sampler only for new traces */
  readonly otelSamplerParentBased: boolean;
  /** otel-max-queuesize: spans the controller holds for export at most; more are dropped and counted */
  readonly otelMaxQueueSize: number;
  /** otel-schedule-delay-millis: the longest a span waits for its batch */
  readonly otelScheduleDelayMillis: number;
  /** otel-max-export-batch-size: spans per OTLP request at most */
  readonly otelMaxExportBatchSize: number;
}

/** OtelSampler is otel-sampler: every new trace sampled, none, or a share of them by trace id. */
export type OtelSampler = 'AlwaysOn' | 'AlwaysOff' | 'TraceIdRatioBased';

/**
 * Tracing is what nginx's Lua needs to trace (lua/ingress_actors/tracing.lua): the sampler, as a ratio of new traces
 * (AlwaysOn 1, AlwaysOff 0), and whether a trusted parent's flag decides instead.
 */
export interface Tracing {
  readonly ratio: number;
  readonly parentBased: boolean;
}

/** Header is one `name: value` pair of an add-headers or proxy-set-headers ConfigMap, both validated. */
export interface Header {
  readonly name: string;
  readonly value: string;
}

export interface Endpoint {
  /** as nginx's `server` wants it: `10.0.0.1:8080` or `[fd00::1]:8080` */
  readonly address: string;
}

/** Upstream is one Service port's ready endpoints. */
export interface Upstream {
  readonly name: string;
  readonly service: string;
  readonly servicePort: string;
  readonly endpoints: readonly Endpoint[];
}

/** BalancedUpstream is an upstream as nginx.conf writes it: endpoints and a balancing method. */
export interface BalancedUpstream extends Upstream {
  /** `hash <key> consistent` (upstream-hash-by, cookie affinity), or null */
  readonly hashKey: string | null;
  readonly leastConn: boolean;
}

/** PathType is an Ingress pathType; ImplementationSpecific stands for a regex path (use-regex, rewrite-target). */
export type PathType = 'Exact' | 'Prefix' | 'ImplementationSpecific';

/** Pass is where a location proxies to: proxy_pass or grpc_pass, and the name it logs. */
export interface Pass {
  readonly grpc: boolean;
  /** `http://default_web_80`, or `http://$ia_canary_0` when a canary picks the upstream */
  readonly url: string;
  /** the same through the Lua balancer (`http://upstream_balancer`), which reads `upstreamName` per request */
  readonly balancedUrl: string;
  /** what `$proxy_upstream_name` is set to: the upstream's name or the canary's variable */
  readonly upstreamName: string;
  /** the canary upstream, when a canary Ingress shares this route */
  readonly canary: string | null;
}

/** ProxySsl is a location's proxy_ssl_* directives (files relative to nginx.conf, written 0600). */
export interface ProxySsl {
  readonly caFile: string | null;
  readonly certificateFile: string | null;
  readonly verify: boolean;
  readonly depth: number;
  readonly name: string | null;
  readonly serverName: boolean;
  readonly protocols: readonly string[];
  readonly ciphers: string;
}

/** ClientSettings are core directives an annotation sets per location. */
export interface ClientSettings {
  readonly maxBodySize: string | null;
  readonly bodyBufferSize: string | null;
}

/** ProxySettings are the proxy_* directives the proxy annotations set; null means nginx's http-level value. */
export interface ProxySettings {
  readonly connectTimeout: string | null;
  readonly sendTimeout: string | null;
  readonly readTimeout: string | null;
  readonly buffering: 'on' | 'off' | null;
  /** proxy_buffer_size and proxy_buffers' size: nginx needs them to agree */
  readonly buffers: { readonly number: number; readonly size: string } | null;
  readonly nextUpstream: readonly string[] | null;
  readonly nextUpstreamTries: number | null;
  readonly nextUpstreamTimeout: string | null;
  readonly httpVersion: '1.0' | '1.1' | null;
  readonly requestBuffering: 'on' | 'off' | null;
  /**
   * proxy_redirect: rewrite Location and Refresh headers starting with `from` to `to`; `to` null is `proxy_redirect
   * default` (null: off, as ingress-nginx)
   */
  readonly redirect: { readonly from: string; readonly to: string | null } | null;
  /** limit_rate and limit_rate_after, in kilobytes (per second for the rate) */
  readonly limitRate: number | null;
  readonly limitRateAfter: number | null;
}

/** GrpcSettings are the grpc_* timeouts for a gRPC location. */
export interface GrpcSettings {
  readonly connectTimeout: string | null;
  readonly sendTimeout: string | null;
  readonly readTimeout: string | null;
}

/** AccessRule is one allow or deny line; `all` ends an allowlist. */
export interface AccessRule {
  readonly allow: boolean;
  readonly address: string;
}

/** Cors is what a location answers for cross-origin requests. */
export interface Cors {
  /** `*`, or the variable a map sets to `$http_origin` when the origin is listed */
  readonly origin: string;
  /** true: every OPTIONS is a preflight (origin `*`); false: only from a listed origin */
  readonly anyOrigin: boolean;
  /** the variable that is non-empty for a preflight from a listed origin */
  readonly preflight: string | null;
  readonly credentials: boolean;
  readonly methods: string;
  readonly headers: string;
  readonly exposeHeaders: string | null;
  readonly maxAge: number;
}

/** SnippetDirective is one directive of a snippet that passed the allow-list (src/model/snippet-policy.ts). */
export interface SnippetDirective {
  /** the allow-list's own spelling of the name */
  readonly name: string;
  /** the arguments as nginx is to read them (escapes undone); the template quotes each */
  readonly args: readonly string[];
}

/** Location is one nginx location block. */
export interface Location {
  /**
   * a profile's name (routes as data, src/sync/shared-server.ts): the location is the named location `@ia_p_<key>`
   * the shared server's router jumps to, and the router, not the location, sets the per-request values; absent for
   * a location of its own
   */
  readonly named?: string;
  /** nginx's match modifier: `=` exact, `` prefix, `~` regex, `~*` case-insensitive regex */
  readonly modifier: '=' | '' | '~' | '~*';
  /** the literal nginx matches; a Prefix `/foo` yields `= /foo` and `/foo/` */
  readonly match: string;
  /** the Ingress path this location serves, as written after normalising */
  readonly path: string;
  readonly pathType: PathType;
  /** the upstream to proxy to, or null when nginx answers itself */
  readonly upstream: string | null;
  /** 503 when the Service or its endpoints are missing (as ingress-nginx), 404 when nothing routes here */
  readonly status: 404 | 503 | null;
  readonly sslRedirect: boolean;
  /** preserve-trailing-slash: the HTTPS redirect keeps a trailing slash */
  readonly preserveTrailingSlash: boolean;
  /** `namespace/name` of the Ingress, for logs and conflicts */
  readonly ingress: string | null;
  /**
   * a security annotation of the Ingress could not be applied: the location answers 503 and does nothing else
   * (ingress-nginx's denied location); it still claims its path, so no other Ingress can serve it unchecked
   */
  readonly denied: boolean;
  /** the proxy target; null when nginx answers itself (status, redirect) */
  readonly pass: Pass | null;
  /** permanent-redirect / temporal-redirect: nginx answers with this instead of proxying */
  readonly redirect: { readonly code: number; readonly url: string } | null;
  /** app-root: `/` redirects (302) here */
  readonly appRoot: string | null;
  /** rewrite-target: the URI is rewritten before proxying */
  readonly rewrite: { readonly regex: string; readonly replacement: string } | null;
  readonly client: ClientSettings | null;
  readonly proxy: ProxySettings | null;
  readonly grpc: GrpcSettings | null;
  /**
   * The location sets proxy headers of its own (upstream-vhost's Host, x-forwarded-prefix,
   * auth-response-headers), so it repeats every proxy header: nginx drops the inherited ones.
   */
  readonly proxyHeaders: {
    readonly host: string;
    readonly forwardedPrefix: string | null;
    /** auth-tls: the verify result and DNs of the client certificate, and the certificate itself when `pass` */
    readonly clientCertificate: { readonly pass: boolean } | null;
  } | null;
  /**
   * auth-tls with verification on: a request that reached this location without a verified client certificate (plain
   * HTTP) is refused
   */
  readonly requireClientCertificate: boolean;
  /**
   * proxy-ssl-*: TLS to the backend (with backend-protocol HTTPS or GRPCS): the CA file (verify), the client
   * certificate file, the name checked and sent; null: none set
   */
  readonly proxySsl: ProxySsl | null;
  readonly grpcHeaders: { readonly host: string } | null;
  /** denylist then allowlist, in nginx's order */
  readonly access: readonly AccessRule[] | null;
  /** basic auth: realm and the htpasswd file (relative to nginx.conf) */
  readonly auth: { readonly realm: string; readonly file: string } | null;
  readonly externalAuth: ExternalAuth | null;
  readonly limitRequests: { readonly zone: string; readonly burst: number } | null;
  readonly limitConnections: { readonly zone: string; readonly count: number } | null;
  readonly cors: Cors | null;
  /** cookie affinity: the variable holding the Set-Cookie value (empty when the cookie is there) */
  readonly setCookie: string | null;
  /** session-cookie-expires with Lua: the seconds from now the location's `$ia_cookie_expires` date is */
  readonly cookieExpires: number | null;
  /**
   * the location adds or hides headers of its own, so it repeats the server's HSTS header and the hiding of the
   * backend's (nginx drops inherited add_header and proxy_hide_header)
   */
  readonly hsts: boolean;
  /**
   * what ingress-nginx's error backends are told (`$namespace`, `$ingress_name`, `$service_name`, `$service_port`):
   * set where a location has error pages or answers from the default-backend annotation's Service, else null
   */
  readonly info: LocationInfo | null;
  /** what request metrics label this location's requests with (ingress-nginx's labels); null when no Ingress routes it */
  readonly route: RouteLabels | null;
  /**
   * OpenTelemetry (enable-opentelemetry, ConfigMap or annotation, with the Lua balancer): a server span per request,
   * its `traceparent` sent on; `trustIncoming`: a valid incoming one is its parent; `operationName`: the annotation's
   * span name (the controller names spans: nginx.conf never prints it), null for the ConfigMap's. null: not traced
   */
  readonly tracing: { readonly trustIncoming: boolean; readonly operationName: string | null } | null;
  /**
   * the path's Service is missing, so the default-backend annotation's Service answers, told so as ingress-nginx
   * tells it (X-Code 503 and the others)
   */
  readonly customDefaultBackend: boolean;
  /** custom-http-errors: codes answered by a named location of the server */
  readonly errorPages: readonly ErrorLocation[] | null;
  /** configuration-snippet: allow-listed directives, each argument printed through `q` */
  readonly snippet: readonly SnippetDirective[] | null;
  /** ModSecurity in this location (enable-modsecurity), or null */
  readonly waf: LocationWaf | null;
}

/** ModSecurityDirective is one checked modsecurity-snippet directive: its name (the list's spelling) and arguments. */
export interface ModSecurityDirective {
  readonly name: string;
  readonly args: readonly string[];
}

/**
 * LocationWaf is ModSecurity in one location: the rules are the shared rule set nginx.conf loads once at the http
 * level (NginxModel.waf), plus the location's own lines, each a checked directive printed as ModSecurity reads it.
 */
export interface LocationWaf {
  /** the OWASP Core Rule Set applies here; when false while it is loaded for others, its rules (ids 900000+) are removed */
  readonly coreRules: boolean;
  /** modsecurity-transaction-id, checked; the request's `$request_id` when absent */
  readonly transactionId: string;
  /**
   * what the audit record's transaction id starts with: `namespace/ingress/` of the location's Ingress (a profile's
   * reads them from `$namespace` and `$ingress_name`, which the router sets), so the log names the Ingress
   */
  readonly ingressPrefix: string;
  /** the location's own ModSecurity lines (modsecurity-snippet), one directive each */
  readonly rules: readonly string[];
}

/**
 * HttpWaf is what nginx.conf loads once, at the http level, while some location has ModSecurity on: the base settings
 * (the audit log as JSON on stderr, request body limits, DetectionOnly as ingress-nginx's default), the ConfigMap's
 * modsecurity-snippet and, when some location asks for it, the OWASP Core Rule Set. Locations inherit it (nginx's
 * merge shares the parsed rules) and add their own lines.
 */
export interface HttpWaf {
  /** ModSecurity lines for the shared rule set, one directive each (Include lines name only the CRS's own files) */
  readonly rules: readonly string[];
  /** the OWASP Core Rule Set is loaded (some location has it): locations without it remove its rules */
  readonly crs: boolean;
}

/**
 * RouteLabels are an Ingress path's request-metric labels (its path is the location's `path`). nginx.conf names them
 * by `id`, a hash of the four, so no Kubernetes string has to be spelled as an nginx `set` value (a regex path's `$`)
 * and the counters nginx keeps per label set stay short.
 */
export interface RouteLabels {
  readonly id: string;
  readonly namespace: string;
  readonly ingressName: string;
  readonly serviceName: string;
}

/** LocationInfo names the Ingress and the Service port (as the Ingress wrote it) a location serves. */
export interface LocationInfo {
  readonly namespace: string;
  readonly ingressName: string;
  readonly serviceName: string;
  readonly servicePort: string;
}

/** ExternalAuthSettings are auth-url's settings as annotations give them, the same for every location of a route. */
export interface ExternalAuthSettings {
  readonly url: string;
  /** the Host of the subrequest: the URL's host[:port], or a host variable */
  readonly host: string;
  readonly method: string;
  /** where a 401 redirects (302), with the return address already added */
  readonly signin: string | null;
  /**
   * the auth answer's Set-Cookie goes to the client (as ingress-nginx): on 2xx, 3xx and some 4xx of the backend
   * (nginx's add_header), on every status when set (auth-always-set-cookie)
   */
  readonly alwaysSetCookie: boolean;
  /** headers of the auth answer copied into the proxied request: `$upstream_http_…` saved in `$ia_auth_…` */
  readonly responseHeaders: readonly { readonly header: string; readonly source: string; readonly variable: string }[];
}

/** ExternalAuth is auth-url on one location: its settings and the names of the server's locations that serve it. */
export interface ExternalAuth extends ExternalAuthSettings {
  /** the internal location auth_request asks: `/_external-auth-<hash of the location>` */
  readonly location: string;
  /** the named location a 401 goes to when there is a sign-in page */
  readonly signinLocation: string;
  /** the server sends HSTS, so the sign-in location, which adds the auth cookie, must repeat it */
  readonly hsts: boolean;
}

/** ErrorLocation is a named location that asks a default backend for an error page, as ingress-nginx does. */
export interface ErrorLocation {
  /** `@custom_<upstream>_<code>` */
  readonly name: string;
  readonly code: number;
  readonly upstream: string;
}

/**
 * Certificate is one file of Secret data nginx.conf names: a TLS certificate and key, or an
 * htpasswd file (basic auth). The caller writes each one 0600 before the config that names it.
 */
export interface Certificate {
  /** `namespace/name` of the Secret, or `default` for the controller's fallback */
  readonly id: string;
  /** relative to nginx.conf's directory: `certificates/...pem`, or `auth/...htpasswd` */
  readonly file: string;
  /** the file's text (PEM chain then key, or htpasswd lines); null means the caller makes a self-signed certificate */
  readonly pem: string | null;
}

/** Server is one nginx server block: one host of one or more Ingresses. */
export interface Server {
  /** the Ingress host, `*.example.com` for a wildcard, `_` for the catch-all */
  readonly host: string;
  /** the server_name nginx matches; a wildcard is a one-label regex, as Ingress v1 means it */
  readonly serverName: string;
  readonly isDefault: boolean;
  /**
   * `namespace/name` of the host's owner (src/model/host-rules.ts hostOwner): the oldest Ingress naming the host,
   * whose server-level settings alone apply; null when only a canary or the fallback names it
   */
  readonly owner: string | null;
  readonly certificateFile: string | null;
  /** the certificate is the default one, which the server inherits from the http level */
  readonly inheritsCertificate: boolean;
  /** `namespace/name` of the Ingresses with a route here, sorted (a comment in nginx.conf) */
  readonly ingresses: readonly string[];
  readonly locations: readonly Location[];
  /** the host has TLS of its own and the ConfigMap wants HSTS */
  readonly hsts: boolean;
  /** server-snippet: allow-listed directives, each argument printed through `q` */
  readonly snippet: readonly SnippetDirective[] | null;
  readonly errorLocations: readonly ErrorLocation[];
  /** auth-tls of the host's owner */
  readonly clientAuth: ClientAuth | null;
  /**
   * the shared server of routes as data (src/sync/shared-server.ts): its `location /` asks the Lua router, and its
   * locations are the profiles; absent for every other server
   */
  readonly router?: boolean;
}

/**
 * ClientAuth is a server's client certificate check: the CA file (written 0600 beside nginx.conf) and how to verify.
 */
export interface ClientAuth {
  readonly caFile: string;
  readonly verifyClient: 'on' | 'off' | 'optional' | 'optional_no_ca';
  readonly depth: number;
  readonly errorPage: string | null;
}

/** MapEntry is one `key value;` line of a map; keys are already escaped for nginx's map. */
export interface MapEntry {
  readonly key: string;
  readonly value: string;
}

/** VariableMap is an nginx `map source $variable { ... }` with a default. */
export interface VariableMap {
  readonly source: string;
  readonly variable: string;
  readonly fallback: string;
  readonly entries: readonly MapEntry[];
}

/** Canary is how one route picks between its main and canary upstreams: header, cookie, then weight. */
export interface Canary {
  readonly maps: readonly VariableMap[];
  /** split_clients on `$request_id`, or null without canary-weight */
  readonly split: { readonly variable: string; readonly entries: readonly MapEntry[] } | null;
  /** the map from the concatenated decisions to the upstream name */
  readonly select: VariableMap;
}

/** LimitZone is a limit_req_zone or limit_conn_zone. */
export interface LimitZone {
  /** `name:5m` */
  readonly zone: string;
  /** `5r/s`, for request zones */
  readonly rate: string | null;
}

/** StreamUpstream is a stream upstream: a TCP or UDP Service port's ready endpoints, or a passthrough host's backend. */
export interface StreamUpstream {
  readonly name: string;
  /** `namespace/name` of the Service its endpoints are from */
  readonly service: string;
  readonly endpoints: readonly Endpoint[];
}

/** StreamService is one entry of the TCP or UDP services ConfigMap: a port nginx listens on and the Service behind it. */
export interface StreamService {
  /** `namespace/configmap key`, for a comment in nginx.conf */
  readonly source: string;
  /** the port, or `address:port` with BuildOptions.listenAddress */
  readonly listen: string;
  readonly udp: boolean;
  readonly upstream: string;
  /** the first PROXY flag: clients send a PROXY protocol header, which names the client */
  readonly decodeProxy: boolean;
  /** the second PROXY flag: the backend is sent a PROXY protocol header naming the client */
  readonly encodeProxy: boolean;
  /** with decodeProxy: the load balancers trusted to name the client (proxy-real-ip-cidr), which the second flag passes on */
  readonly realIpFrom: readonly string[];
}

/** PassthroughHost is a host whose TLS connections go to its backend undecrypted (ssl-passthrough). */
export interface PassthroughHost {
  /** the host as nginx's map matches SNI: exact, or the server's one-label regex for a wildcard */
  readonly match: string;
  readonly upstream: string;
}

/**
 * Passthrough is `--enable-ssl-passthrough`: a stream server on the HTTPS port reads the SNI (ssl_preread) and sends
 * passthrough hosts to their backends, everything else to the http servers' TLS listener, which moves to a unix
 * socket and learns the client address from the PROXY protocol header the stream server adds. Passthrough
 * connections go through one more internal stream server that takes that header off again.
 */
export interface Passthrough {
  /** the HTTPS port, or `address:port` */
  readonly listen: string;
  /** use-proxy-protocol: connections to the HTTPS port start with a PROXY header from the load balancer */
  readonly decodeProxy: boolean;
  /** the load balancers trusted to name the client in that header (proxy-real-ip-cidr) */
  readonly realIpFrom: readonly string[];
  /** absolute path of the unix socket the http servers' TLS listener moves to */
  readonly httpsSocket: string;
  /** absolute path of the unix socket of the stream server that removes the PROXY header for passthrough hosts */
  readonly relaySocket: string;
  readonly hosts: readonly PassthroughHost[];
}

/**
 * StreamModel is nginx's stream block: TCP and UDP services (`--tcp-services-configmap`, `--udp-services-configmap`)
 * and ssl-passthrough. Debian has no stream Lua module, so its upstreams list their endpoints: an endpoint change of
 * such a Service changes nginx.conf and reloads nginx.
 */
export interface StreamModel {
  readonly modules: readonly string[];
  readonly upstreams: readonly StreamUpstream[];
  readonly services: readonly StreamService[];
  readonly passthrough: Passthrough | null;
  /** the Gateway API's TLS, TCP and UDP listeners (src/model/gateway/nginx-stream.ts); absent: none */
  readonly gateway?: GatewayStream;
}

/**
 * GatewayStreamServer is one stream server of Gateway listeners: a TCP or UDP port's `proxy_pass` target, or a TLS
 * Passthrough port's SNI map. Targets are stream upstream names or split_clients variables.
 */
export interface GatewayStreamServer {
  readonly listen: string;
  readonly udp: boolean;
  /** `namespace/name` of the Gateways with a listener here (a comment in nginx.conf) */
  readonly gateways: readonly string[];
  /** TCP, UDP: what proxy_pass gets; null for an SNI server */
  readonly target: string | null;
  /** TLS Passthrough: `map $ssl_preread_server_name <variable>`, exact names and `~*` regexes; default closed */
  readonly sni: {
    readonly variable: string;
    readonly entries: readonly { readonly match: string; readonly target: string }[];
  } | null;
}

/** GatewayStream is what the Gateway API adds to the stream block. */
export interface GatewayStream {
  /** split_clients blocks for routes with several weighted backends (shares like `70.00%`, the last `*`) */
  readonly splits: readonly {
    readonly variable: string;
    readonly entries: readonly { readonly share: string; readonly target: string }[];
  }[];
  readonly servers: readonly GatewayStreamServer[];
  /** some target is ia_gw_closed (an unresolved backend, a name no route serves): the template defines it */
  readonly closed: boolean;
  /** TLS Terminate: the internal servers that terminate one listener's name each (absent: none) */
  readonly terminations?: readonly GatewayTermination[];
  /** where each stream route is served, for the status page (absent: none); not part of nginx.conf */
  readonly served?: readonly GatewayStreamServed[];
}

/** GatewayStreamServed is one stream route and where nginx serves it: an SNI name (`*`: any), or `:port` (TCP, UDP). */
export interface GatewayStreamServed {
  readonly kind: 'TLSRoute' | 'TCPRoute' | 'UDPRoute';
  /** `namespace/name` */
  readonly route: string;
  readonly where: string;
}

/**
 * GatewayTermination is a TLS Terminate listener's route hostname: the SNI map sends its connections to `upstream`,
 * whose only server is `socket`, a stream server with `ssl` and the listener's certificate that proxies the plain
 * bytes to `target`.
 */
export interface GatewayTermination {
  readonly upstream: string;
  /** an absolute unix socket path (the stream module's socket folder) */
  readonly socket: string;
  /** the certificate chain and key, relative to nginx.conf's directory (a Certificate's file) */
  readonly certificateFile: string;
  readonly target: string;
  /** `namespace/name listener hostname`, a comment in nginx.conf (checked values) */
  readonly comment: string;
}

/** NginxModel is everything render() needs: sorted, validated, free of raw Kubernetes strings. */
export interface NginxModel {
  /** the Gateway API's servers (Lua only), or null */
  readonly gateway: GatewayModel | null;
  /** a Gateway serves the catch-all on the http / https port: the Ingress default server is not default_server there */
  readonly gatewayDefault: { readonly http: boolean; readonly https: boolean };
  readonly httpPort: number;
  readonly httpsPort: number;
  /** `address:port` for the listen directives when BuildOptions.listenAddress is set; null listens on all addresses */
  readonly listen: { readonly http: string; readonly https: string } | null;
  /** the Lua balancer's settings, or null when backends and certificates are rendered into nginx.conf */
  readonly lua: LuaSettings | null;
  /** set when a location is traced (Location.tracing; Lua only): the sampler nginx's Lua applies */
  readonly tracing: Tracing | null;
  /**
   * locations and the router set the request's Ingress host and route id ($ia_host, $ia_route): request metrics and
   * spans read them (Lua only)
   */
  readonly routeLabels: boolean;
  /** load_module paths of the optional modules (NginxModules) besides the Lua balancer's */
  readonly modules: readonly string[];
  /** ModSecurity's shared rule set while a location has it on, else null */
  readonly waf: HttpWaf | null;
  /** add-headers: `Name: value` lines for more_set_headers at the http level */
  readonly addHeaders: readonly string[];
  /** proxy-set-headers: request headers for the backends, beside the controller's own */
  readonly proxySetHeaders: readonly Header[];
  /** server-tokens off with headers-more loaded: the Server header is cleared, as ingress-nginx does */
  readonly clearServerHeader: boolean;
  /** the stream block, or null when no flag asks for one (then the stream module is not loaded) */
  readonly stream: StreamModel | null;
  /** with ssl-passthrough, the unix socket the http servers' TLS listener moves to (PROXY protocol); else null */
  readonly httpsSocket: string | null;
  /** the unix socket stub_status is served on (BuildOptions.statusSocket), or null */
  readonly statusSocket: string | null;
  /**
   * where `ssl-redirect` sends plain HTTP, as ingress-nginx: the best host without its port, then the request URI
   * without one trailing slash (`$ia_redirect_uri`); with the --https-port when it is not 443
   */
  readonly httpsRedirect: string;
  /** the same for a location with preserve-trailing-slash: the request URI as sent */
  readonly httpsRedirectPreserved: string;
  /** X-Original-Forwarded-For: the variable of the client's forwarded-for-header, sent on as it came */
  readonly originalForwardedFor: string;
  readonly config: GlobalConfig;
  /** the Strict-Transport-Security value, or null when hsts is off */
  readonly hstsHeader: string | null;
  /**
   * set when a location uses auth-url: the nameservers for the names it looks up per request (the controller's
   * /etc/resolv.conf)
   */
  readonly externalAuth: {
    readonly resolvers: readonly string[];
    /** the maps that escape `$escaped_request_uri`, without Lua (with Lua a location computes it) */
    readonly escape: UriEscape | null;
  } | null;
  /** the http-level Host header, which a location with upstream-vhost replaces */
  readonly proxyHeaders: { readonly host: string };
  readonly requestZones: readonly LimitZone[];
  readonly connectionZones: readonly LimitZone[];
  /** CORS origin lists and cookie affinity, as maps */
  readonly maps: readonly VariableMap[];
  readonly canaries: readonly Canary[];
  readonly defaultServer: Server;
  readonly servers: readonly Server[];
  /** the certificate of every server without TLS of its own, set once at the http level */
  readonly defaultCertificateFile: string;
  readonly upstreams: readonly BalancedUpstream[];
  /** every Secret-derived file nginx.conf names: certificates, then htpasswd files */
  readonly certificates: readonly Certificate[];
  /** a digest of those files' contents, printed in nginx.conf so that a renewed file means a reload */
  readonly filesDigest: string;
}
