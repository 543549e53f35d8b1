/**
 * The typed subset of gateway.networking.k8s.io/v1 (GatewayClass, Gateway, HTTPRoute) and v1beta1
 * (ReferenceGrant) that the Gateway API core reads. read.ts fills these from untrusted objects;
 * every string in them has passed its field's validator.
 */

/** GATEWAY_GROUP is the API group of every Gateway API kind. */
export const GATEWAY_GROUP = 'gateway.networking.k8s.io';

/** ObjectRef names one object: namespace ('' for cluster-scoped) and name. */
export interface ObjectRef {
  readonly namespace: string;
  readonly name: string;
}

/** Meta is what the core keeps of an object's metadata. */
export interface Meta extends ObjectRef {
  readonly generation: number;
  /** milliseconds since the epoch; NaN when absent (sorts last) */
  readonly created: number;
  readonly labels: Readonly<Record<string, string>>;
}

export interface GatewayClass {
  readonly meta: Meta;
  readonly controllerName: string;
  /** parametersRef is set (this controller supports none) */
  readonly hasParameters: boolean;
}

export type ListenerProtocol = 'HTTP' | 'HTTPS';

/** L4_PROTOCOLS are the listener protocols the stream module serves (l4.ts): TLSRoute, TCPRoute, UDPRoute. */
export const L4_PROTOCOLS = ['TLS', 'TCP', 'UDP'] as const;
export type L4Protocol = (typeof L4_PROTOCOLS)[number];

/** isL4Protocol says whether a listener protocol is served by the stream module. */
export const isL4Protocol = (protocol: string): protocol is L4Protocol =>
  (L4_PROTOCOLS as readonly string[]).includes(protocol);

/** LabelSelector is matchLabels and matchExpressions, as metav1.LabelSelector. */
export interface LabelSelector {
  readonly matchLabels: Readonly<Record<string, string>>;
  readonly matchExpressions: readonly {
    readonly key: string;
    readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
    readonly values: readonly string[];
  }[];
}

export type AllowedNamespaces =
  | { readonly from: 'Same' }
  | { readonly from: 'All' }
  | { readonly from: 'Selector'; readonly selector: LabelSelector };

export interface RouteGroupKind {
  readonly group: string;
  readonly kind: string;
}

/** SecretRef is a listener's certificateRef, with group and kind as written (defaults filled). */
export interface CertificateRef extends ObjectRef {
  readonly group: string;
  readonly kind: string;
}

export interface Listener {
  readonly name: string;
  /** undefined: any host */
  readonly hostname: string | undefined;
  readonly port: number;
  /** as written; only HTTP and HTTPS are supported */
  readonly protocol: string;
  readonly certificateRefs: readonly CertificateRef[];
  /** `tls.mode` (default Terminate); only a TLS listener may be Passthrough */
  readonly tlsMode: 'Terminate' | 'Passthrough';
  readonly allowedNamespaces: AllowedNamespaces;
  /** undefined: the protocol's default (HTTPRoute) */
  readonly allowedKinds: readonly RouteGroupKind[] | undefined;
  /** problems that make this listener invalid (field: message) */
  readonly invalid: readonly { readonly field: string; readonly message: string }[];
}

/**
 * GatewaySpecAddress is one entry of a Gateway's `spec.addresses`: an IPAddress with a checked IP (or no value: any
 * address of the pool), or another type, kept only to be refused (its value is not kept: it never reaches nginx).
 */
export type GatewaySpecAddress =
  | { readonly type: 'IPAddress'; readonly value: string | undefined }
  | { readonly type: 'unsupported'; readonly written: string };

/** FrontendMode is a client-certificate validation's `mode`. */
export type FrontendMode = 'AllowValidOnly' | 'AllowInsecureFallback';

/** FrontendValidation is one `validation` block of `spec.tls.frontend` as read: its CA refs (as written) and mode. */
export interface FrontendValidation {
  readonly caRefs: readonly {
    readonly group: string;
    readonly kind: string;
    readonly name: string;
    readonly namespace: string | undefined;
  }[];
  readonly mode: FrontendMode | undefined;
}

/** FrontendTls is a Gateway's `spec.tls.frontend`: the default validation and those per port. */
export interface FrontendTls {
  readonly default: FrontendValidation | undefined;
  readonly perPort: ReadonlyMap<number, FrontendValidation>;
}

export interface Gateway {
  readonly meta: Meta;
  readonly gatewayClassName: string;
  readonly listeners: readonly Listener[];
  /** `spec.infrastructure.parametersRef` as `group/kind name` (shown quoted), when set: this controller supports none */
  readonly parametersRef: string | undefined;
  /** `spec.addresses`; an IPAddress whose value is not an IP address is `unsupported` */
  readonly addresses: readonly GatewaySpecAddress[];
  /** the IPAddress values its `status.addresses` holds now (checked): the pool keeps a Gateway's address stable */
  readonly statusAddresses: readonly string[];
  /** `spec.tls.frontend`: client-certificate validation (src/model/gateway/frontend-tls.ts); absent: none */
  readonly frontend?: FrontendTls;
  /** `spec.tls.backend.clientCertificateRef` as written (the namespace defaulted): the certificate shown to TLS backends */
  readonly backendClientCertificate?: CertificateRef;
  /** `spec.allowedListeners.namespaces`: where ListenerSets may attach from; absent: none (the spec's default) */
  readonly allowedListeners?: AllowedListeners;
}

/** AllowedListeners is a Gateway's `spec.allowedListeners.namespaces` (the allowedRoutes choices, and None). */
export type AllowedListeners = AllowedNamespaces | { readonly from: 'None' };

/**
 * ListenerSet (gateway.networking.k8s.io/v1, standard since v1.5): listeners of a parent Gateway kept in another
 * object, possibly another namespace (src/model/gateway/listener-sets.ts).
 */
export interface ListenerSet {
  readonly meta: Meta;
  /** `spec.parentRef` with defaults filled (group gateway.networking.k8s.io, kind Gateway, the set's namespace) */
  readonly parentRef: {
    readonly group: string;
    readonly kind: string;
    readonly namespace: string;
    readonly name: string;
  };
  readonly listeners: readonly Listener[];
}

export interface ParentRef {
  readonly group: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly sectionName: string | undefined;
  readonly port: number | undefined;
}

export type PathMatch =
  | { readonly type: 'Exact'; readonly value: string }
  | { readonly type: 'PathPrefix'; readonly value: string }
  | { readonly type: 'RegularExpression'; readonly value: string };

export interface ValueMatch {
  readonly type: 'Exact' | 'RegularExpression';
  readonly name: string;
  readonly value: string;
}

export const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

/**
 * GrpcMethodMatch is a GRPCRoute match's `method` as written (validated); the reader turns it into the `path` of
 * its RouteMatch (a gRPC call is a POST to `/<service>/<method>`) and keeps it for the GRPCRoute precedence.
 */
export interface GrpcMethodMatch {
  readonly type: 'Exact' | 'RegularExpression';
  readonly service: string | undefined;
  readonly method: string | undefined;
}

export interface RouteMatch {
  readonly path: PathMatch;
  /** set on the matches of a GRPCRoute (the path is derived from it) */
  readonly grpc?: GrpcMethodMatch;
  readonly headers: readonly ValueMatch[];
  readonly queryParams: readonly ValueMatch[];
  readonly method: HttpMethod | undefined;
}

export interface HeaderModifier {
  readonly set: readonly { readonly name: string; readonly value: string }[];
  readonly add: readonly { readonly name: string; readonly value: string }[];
  readonly remove: readonly string[];
}

export type PathModifier =
  | { readonly type: 'ReplaceFullPath'; readonly value: string }
  | { readonly type: 'ReplacePrefixMatch'; readonly value: string };

export type RouteFilter =
  | { readonly type: 'RequestHeaderModifier'; readonly modifier: HeaderModifier }
  | { readonly type: 'ResponseHeaderModifier'; readonly modifier: HeaderModifier }
  | {
      readonly type: 'RequestRedirect';
      readonly scheme: 'http' | 'https' | undefined;
      readonly hostname: string | undefined;
      readonly path: PathModifier | undefined;
      readonly port: number | undefined;
      readonly statusCode: 301 | 302 | 303 | 307 | 308;
    }
  | {
      readonly type: 'URLRewrite';
      readonly hostname: string | undefined;
      readonly path: PathModifier | undefined;
    }
  /** percent: the share of requests mirrored, 0 to 100 (from `percent` or `fraction`; 100 when neither) */
  | { readonly type: 'RequestMirror'; readonly backendRef: BackendRef; readonly percent: number }
  | ({ readonly type: 'CORS' } & CorsPolicy);

/**
 * CorsPolicy is a CORS filter (HTTPCORSFilter), checked: origins are `*` or `http(s)://host[:port]` in lower case
 * (the host may start with `*.`, or be `*`), methods are HTTP methods or `*`, headers are tokens or `*` (a `*` alone
 * in its list); maxAge in seconds.
 */
export interface CorsPolicy {
  readonly allowOrigins: readonly string[];
  readonly allowCredentials: boolean;
  readonly allowMethods: readonly string[];
  readonly allowHeaders: readonly string[];
  readonly exposeHeaders: readonly string[];
  readonly maxAge: number;
}

/** RouteTimeouts are a rule's `timeouts`, in milliseconds; undefined: not set; 0: no timeout (the spec's "0s"). */
export interface RouteTimeouts {
  readonly request: number | undefined;
  readonly backendRequest: number | undefined;
}

export interface BackendRef {
  readonly group: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly port: number | undefined;
  readonly weight: number;
  /** the backendRef's own RequestHeaderModifier filters (HTTPRoute only), applied when it is picked */
  readonly requestHeaders?: readonly HeaderModifier[];
}

export interface RouteRule {
  /** `name` (GEP-995), checked as a SectionName; undefined: unnamed */
  readonly name?: string;
  readonly matches: readonly RouteMatch[];
  readonly filters: readonly RouteFilter[];
  readonly backendRefs: readonly BackendRef[];
  readonly timeouts: RouteTimeouts;
}

/**
 * RouteKind is the kind of a route: HTTPRoute, or GRPCRoute, TLSRoute, TCPRoute, UDPRoute (read into the same shape:
 * the stream kinds' rules have only backendRefs, read-l4.ts).
 */
export type RouteKind = 'HTTPRoute' | 'GRPCRoute' | L4RouteKind;
export type L4RouteKind = 'TLSRoute' | 'TCPRoute' | 'UDPRoute';

export interface HTTPRoute {
  readonly meta: Meta;
  readonly kind: RouteKind;
  readonly parentRefs: readonly ParentRef[];
  readonly hostnames: readonly string[];
  readonly rules: readonly RouteRule[];
  /** field: message for each value refused; a route with any is not accepted (UnsupportedValue) */
  readonly invalid: readonly { readonly field: string; readonly message: string }[];
}

export interface ReferenceGrant {
  readonly meta: Meta;
  readonly from: readonly { readonly group: string; readonly kind: string; readonly namespace: string }[];
  readonly to: readonly { readonly group: string; readonly kind: string; readonly name: string | undefined }[];
}

/** Condition is a status condition as data; the status writer adds lastTransitionTime. */
export interface Condition {
  readonly type: string;
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason: string;
  readonly message: string;
  readonly observedGeneration: number;
}
