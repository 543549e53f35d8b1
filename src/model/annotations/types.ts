/**
 * The shapes every annotation module shares: what a key declares (ingress-nginx's name, risk,
 * scope, our support and its documentation), the input a parser reads, and the typed result
 * all parsers together produce. No raw annotation string leaves a parser: each one returns
 * validated, typed fields, and buildModel turns those into the nginx model.
 */
import type {
  Cors,
  GlobalConfig,
  ModSecurityDirective,
  ProxySettings,
  RiskLevel,
  SnippetDirective,
} from '../nginx-model.js';
import type { NginxModules } from '../machine-settings.js';
import type { Secret } from '../snapshot.js';

/** ANNOTATION_PREFIX is ingress-nginx's default `--annotations-prefix`. */
export const ANNOTATION_PREFIX = 'nginx.ingress.kubernetes.io/';

/**
 * Scope is where ingress-nginx applies an annotation: every location of the Ingress, or the Ingress (server) as a
 * whole.
 */
export type Scope = 'location' | 'ingress';

/** AnnotationKey is one supported key, as the compatibility table lists it. */
export interface AnnotationKey {
  /** without the prefix: `rewrite-target` */
  readonly key: string;
  /** older names read when the key itself is absent (`whitelist-source-range`) */
  readonly aliases?: readonly string[];
  readonly risk: RiskLevel;
  readonly scope: Scope;
  /** `partial` when some of ingress-nginx's behaviour is missing; `note` says what */
  readonly support: 'supported' | 'partial';
  /** what an invalid value does (ingress-nginx's rule for the key): see OnInvalid */
  readonly onInvalid: OnInvalid;
  readonly doc: string;
  readonly note?: string;
}

/**
 * OnInvalid is what an invalid value of a key costs, as ingress-nginx decides per annotation:
 * `ignore`: the key is ignored and its default applies, the Ingress is served;
 * `deny`: a security annotation that cannot be applied fails closed: every location of the
 * Ingress answers 503 (ingress-nginx's denied locations), its other Ingresses and hosts unharmed;
 * `filter`: a list keeps its valid entries and each bad one is dropped (a value bad as a whole,
 * such as one too long, is ignored as with `ignore`).
 * Every case is reported as a problem (and an Event) naming the key.
 */
export type OnInvalid = 'ignore' | 'deny' | 'filter';

/** RefusedAnnotation is an ingress-nginx key this controller does not implement, and what it does when it meets one. */
export interface RefusedAnnotation {
  readonly key: string;
  readonly risk: RiskLevel;
  readonly scope: Scope;
  /**
   * `denied`: serving without it could be unsafe (a security feature), so the Ingress's locations answer 503;
   * `ignored`: reported, Ingress served
   */
  readonly effect: 'denied' | 'ignored';
  readonly reason: string;
}

/** AnnotationInput is what a parser reads: annotation values and the little context validation needs. */
export interface AnnotationInput {
  readonly namespace: string;
  readonly name: string;
  readonly config: GlobalConfig;
  /** the optional nginx modules present (snippets may use their directives) */
  readonly modules: NginxModules;
  /** the value of the key (or of an alias, when the key is absent); empty means absent, as ingress-nginx reads it */
  get(key: string): string | undefined;
  /** the key actually present for `key`: itself or one of its aliases (for problem messages) */
  keyOf(key: string): string;
  /**
   * an invalid value: reported, and the key's OnInvalid rule applies (the parser then goes on with the default).
   * `entry` says the message is about one entry of a list, which a `filter` key drops while keeping the rest.
   */
  invalid(key: string, message: string, entry?: 'entry'): void;
  /** a value that is understood but not (fully) applied: reported, Ingress kept */
  note(key: string, message: string): void;
  secret(namespace: string, name: string): Secret | undefined;
}

/** AnnotationGroup is one module: its keys and the parser that reads them into one field of IngressAnnotations. */
export interface AnnotationGroup<K extends keyof IngressAnnotations = keyof IngressAnnotations> {
  readonly name: string;
  readonly field: K;
  readonly keys: readonly AnnotationKey[];
  readonly parse: (input: AnnotationInput) => IngressAnnotations[K];
}

/** ProxySslAnnotations are the proxy-ssl-* annotations, validated (src/model/annotations/proxy-ssl.ts). */
export interface ProxySslAnnotations {
  /** `namespace/name` of proxy-ssl-secret; null: none (only the name and SNI are set) */
  readonly secretId: string | null;
  /** its `ca.crt`, checked PEM certificates */
  readonly caPem: string | null;
  /** its `tls.crt` then `tls.key`, when both are there: the client certificate shown to the backend */
  readonly clientPem: string | null;
  readonly verify: boolean;
  readonly depth: number;
  readonly name: string | null;
  readonly serverName: boolean;
  readonly protocols: readonly string[];
  readonly ciphers: string;
}

/** RewriteAnnotations are the rewrite group: paths as regexes, rewrite-target, app-root and the TLS redirects. */
export interface RewriteAnnotations {
  readonly target: string | null;
  readonly useRegex: boolean;
  readonly appRoot: string | null;
  /** null: the ConfigMap's ssl-redirect */
  readonly sslRedirect: boolean | null;
  /** null: the ConfigMap's force-ssl-redirect */
  readonly forceSslRedirect: boolean | null;
  /** the HTTPS redirect keeps a trailing slash (absent: false, ingress-nginx's default) */
  readonly preserveTrailingSlash?: boolean;
}

/** AffinityAnnotations are cookie affinity's settings, validated. */
export interface AffinityAnnotations {
  readonly cookieName: string;
  /** null: the location's path */
  readonly path: string | null;
  /** session-cookie-max-age */
  readonly maxAge: number | null;
  /** session-cookie-expires, in seconds from the request */
  readonly expires: number | null;
  readonly domain: string | null;
  readonly sameSite: 'None' | 'Lax' | 'Strict' | null;
  readonly secure: boolean;
}

/** CanaryAnnotations say when a canary Ingress takes a request from the main one. */
export interface CanaryAnnotations {
  /** the `$http_...` variable of canary-by-header */
  readonly header: { readonly variable: string; readonly value: string | null } | null;
  /** canary-by-cookie: the cookie's name (checkCookieName) */
  readonly cookie: string | null;
  /** canary-weight as a share of canary-weight-total, 0..1; null when unset */
  readonly weight: number | null;
}

/** RateLimitAnnotations are limit-rps, limit-rpm and limit-connections. */
export interface RateLimitAnnotations {
  readonly rps: number | null;
  readonly rpm: number | null;
  readonly connections: number | null;
  readonly burstMultiplier: number;
}

/** ExternalAuthAnnotations are auth-url and its companions, validated; signin already carries its return address. */
export interface ExternalAuthAnnotations {
  readonly url: string;
  /** the URL's host[:port] (or its host variable), the Host of the subrequest */
  readonly host: string;
  readonly method: string;
  readonly signin: string | null;
  readonly responseHeaders: readonly string[];
  /** auth-always-set-cookie: the auth answer's Set-Cookie reaches the client whatever the backend answers */
  readonly alwaysSetCookie: boolean;
}

/** AuthTlsAnnotations are client certificate authentication's settings, validated, with the CA bundle read. */
export interface AuthTlsAnnotations {
  readonly secretId: string;
  readonly caPem: string;
  readonly verifyClient: 'on' | 'off' | 'optional' | 'optional_no_ca';
  readonly depth: number;
  readonly errorPage: string | null;
  readonly passCertificate: boolean;
}

/** ModSecurityAnnotations are the WAF annotations of an Ingress, settled against the ConfigMap and the machine. */
export interface ModSecurityAnnotations {
  /** ModSecurity is on in the Ingress's locations (its enable-modsecurity, else the ConfigMap's) */
  readonly on: boolean;
  /** enable-owasp-core-rules; null: the ConfigMap's enable-owasp-modsecurity-crs */
  readonly coreRules: boolean | null;
  readonly transactionId: string | null;
  readonly snippet: readonly ModSecurityDirective[] | null;
}

/** IngressAnnotations is everything the annotations of one Ingress ask for, typed and validated. */
export interface IngressAnnotations {
  readonly rewrite: RewriteAnnotations;
  readonly redirect: { readonly code: number; readonly url: string } | null;
  readonly backendProtocol: 'http' | 'https' | 'grpc' | 'grpcs';
  readonly upstreamVhost: string | null;
  readonly forwardedPrefix: string | null;
  readonly defaultBackend: string | null;
  readonly customHttpErrors: readonly number[];
  readonly client: { readonly maxBodySize: string | null; readonly bodyBufferSize: string | null } | null;
  readonly proxy: ProxySettings | null;
  /** denylist then allowlist, already in nginx's allow/deny order */
  readonly access: readonly { readonly allow: boolean; readonly address: string }[] | null;
  readonly auth: { readonly realm: string; readonly secretId: string; readonly content: string } | null;
  readonly externalAuth: ExternalAuthAnnotations | null;
  readonly authTls: AuthTlsAnnotations | null;
  /** proxy-ssl-*: TLS to the backend checked (null: none of them set, or the Ingress is denied for them) */
  readonly proxySsl: ProxySslAnnotations | null;
  /** CORS settings, with the origin list still to be turned into a map by buildModel */
  readonly cors: {
    readonly origins: readonly string[] | null;
    readonly settings: Omit<Cors, 'origin' | 'anyOrigin' | 'preflight'>;
  } | null;
  readonly rateLimit: RateLimitAnnotations | null;
  readonly affinity: AffinityAnnotations | null;
  readonly balance: {
    readonly leastConn: boolean | null;
    readonly hashBy: string | null;
    readonly serviceUpstream: boolean;
  };
  readonly canary: CanaryAnnotations | null;
  readonly snippets: {
    readonly configuration: readonly SnippetDirective[] | null;
    readonly server: readonly SnippetDirective[] | null;
  };
  /** a `deny` key could not be applied: every location of the Ingress answers 503 */
  readonly denied: boolean;
  /** ModSecurity: null when an annotation of it could not be applied (the Ingress is then denied) */
  readonly modsecurity: ModSecurityAnnotations | null;
  /** ssl-passthrough: TLS to the Ingress's hosts goes to their `/` backend undecrypted (with --enable-ssl-passthrough) */
  readonly sslPassthrough: boolean;
  /** enable-opentelemetry, opentelemetry-trust-incoming-span and opentelemetry-operation-name; null: the ConfigMap's */
  readonly tracing: {
    readonly enabled: boolean | null;
    readonly trustIncoming: boolean | null;
    readonly operationName: string | null;
  };
}
