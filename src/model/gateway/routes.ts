/**
 * What buildGatewayRoutes answers (types only): for each programmed listener the routes it serves, and the status of
 * every object this controller owns. A leaf below the builder, so the nginx model, the status writer and the
 * machines can name these shapes without importing the Gateway API core.
 */
import type { Problem } from '../nginx-model.js';
import type {
  Condition,
  HeaderModifier,
  ObjectRef,
  ParentRef,
  RouteFilter,
  RouteGroupKind,
  RouteMatch,
  RouteTimeouts,
} from './types.js';

/** EffectiveBackend is a weighted backend; an unresolved one keeps its weight share (answered 500 later). */
export type EffectiveBackend =
  | {
      readonly kind: 'service';
      readonly namespace: string;
      readonly name: string;
      readonly port: number;
      readonly weight: number;
      /** the backendRef's own RequestHeaderModifier filters */
      readonly requestHeaders?: readonly HeaderModifier[];
    }
  | { readonly kind: 'unresolved'; readonly weight: number; readonly reason: string };

/** EffectiveRoute is one match of one rule of one HTTPRoute or GRPCRoute, as a listener serves it. */
export interface EffectiveRoute {
  readonly route: ObjectRef;
  /** absent: an HTTPRoute's */
  readonly kind?: 'GRPCRoute';
  /** the effective hostname the route matched through (null: any host); below the host's own, broader ones follow */
  readonly hostname: string | null;
  readonly ruleIndex: number;
  readonly matchIndex: number;
  readonly match: RouteMatch;
  readonly filters: readonly RouteFilter[];
  readonly backends: readonly EffectiveBackend[];
  /** the backends of the rule's RequestMirror filters, in filter order, resolved as backendRefs are */
  readonly mirrors: readonly EffectiveBackend[];
  readonly timeouts: RouteTimeouts;
}

/**
 * HostRoutes are the routes a request for one effective hostname (null: any host) can match, highest
 * precedence first: those through this very hostname, then those through broader ones that cover it.
 */
export interface HostRoutes {
  readonly hostname: string | null;
  readonly routes: readonly EffectiveRoute[];
}

/** ListenerRoutes is what one programmed listener serves; hosts are ordered most specific first. */
export interface ListenerRoutes {
  readonly gateway: ObjectRef;
  readonly listener: string;
  readonly port: number;
  readonly protocol: 'HTTP' | 'HTTPS';
  readonly hostname: string | undefined;
  readonly certificates: readonly ObjectRef[];
  readonly hosts: readonly HostRoutes[];
  /** the Gateway's own address from `--gateway-addresses`; absent: nginx's shared address */
  readonly address?: string;
  /** the Gateway's certificate for TLS backends (`spec.tls.backend.clientCertificateRef`), resolved; absent: none */
  readonly backendClientCertificate?: ObjectRef;
  /** HTTPS: the client-certificate validation of the listener's port (`spec.tls.frontend`); absent: none */
  readonly clientCa?: { readonly pem: string; readonly mode: 'AllowValidOnly' | 'AllowInsecureFallback' };
}

/**
 * StreamRoute is the route a stream listener serves for one SNI hostname (TLS; null: any name) or for the whole port
 * (TCP, UDP: hostname null): the oldest route attached there (then by namespace/name), its weighted backends.
 */
export interface StreamRoute {
  readonly hostname: string | null;
  readonly kind: 'TLSRoute' | 'TCPRoute' | 'UDPRoute';
  readonly route: ObjectRef;
  readonly backends: readonly EffectiveBackend[];
}

/** StreamListenerRoutes is what one programmed TLS, TCP or UDP listener serves, through nginx's stream module. */
export interface StreamListenerRoutes {
  readonly gateway: ObjectRef;
  readonly listener: string;
  readonly port: number;
  readonly protocol: 'TLS' | 'TCP' | 'UDP';
  /** a TLS listener's mode; Terminate for TCP and UDP (meaningless there) */
  readonly tlsMode: 'Terminate' | 'Passthrough';
  readonly hostname: string | undefined;
  /** a TLS Terminate listener's certificates */
  readonly certificates: readonly ObjectRef[];
  /** most specific hostname first */
  readonly routes: readonly StreamRoute[];
  /** the Gateway's own address from `--gateway-addresses`; absent: nginx's shared address */
  readonly address?: string;
}

export interface ListenerStatus {
  readonly name: string;
  readonly supportedKinds: readonly RouteGroupKind[];
  readonly attachedRoutes: number;
  readonly conditions: readonly Condition[];
}

export interface RouteParentStatus {
  readonly parentRef: ParentRef;
  readonly controllerName: string;
  readonly conditions: readonly Condition[];
}

/** GatewayStatus is the status of every object this controller owns, without lastTransitionTime. */
export interface GatewayStatus {
  readonly gatewayClasses: readonly { readonly name: string; readonly conditions: readonly Condition[] }[];
  readonly gateways: readonly (ObjectRef & {
    readonly conditions: readonly Condition[];
    readonly listeners: readonly ListenerStatus[];
    /** `status.addresses` (IPAddress) from `--gateway-addresses`, [] when none is assigned; absent: the publish address */
    readonly addresses?: readonly string[];
    /** `status.attachedListenerSets`: the accepted ListenerSets; absent when the Gateway allows none */
    readonly attachedListenerSets?: number;
  })[];
  /** the ListenerSets naming a Gateway of ours (listener-sets.ts); absent: none */
  readonly listenerSets?: readonly ListenerSetStatus[];
  readonly httpRoutes: readonly RouteStatus[];
  /** absent: none (older producers of this shape) */
  readonly grpcRoutes?: readonly RouteStatus[];
  readonly tlsRoutes?: readonly RouteStatus[];
  readonly tcpRoutes?: readonly RouteStatus[];
  readonly udpRoutes?: readonly RouteStatus[];
  /** BackendTLSPolicies with an ancestor of ours (src/model/gateway/backend-tls.ts); absent: none */
  readonly backendTLSPolicies?: readonly PolicyStatus[];
}

/** ListenerSetStatus is a ListenerSet's status: its conditions and one entry per listener (ListenerEntryStatus). */
export type ListenerSetStatus = ObjectRef & {
  readonly conditions: readonly Condition[];
  readonly listeners: readonly ListenerStatus[];
};

/** PolicyStatus is one policy's `status.ancestors` entries of this controller (an ancestor is a Gateway). */
export interface PolicyStatus extends ObjectRef {
  readonly ancestors: readonly { readonly ancestorRef: ObjectRef; readonly conditions: readonly Condition[] }[];
}

/** RouteStatus is one route's `status.parents` entries of this controller. */
export type RouteStatus = ObjectRef & { readonly parents: readonly RouteParentStatus[] };

export interface GatewayRoutes {
  readonly listeners: readonly ListenerRoutes[];
  /** the TLS, TCP and UDP listeners (absent: none), served by the stream module */
  readonly streams?: readonly StreamListenerRoutes[];
  readonly status: GatewayStatus;
  readonly problems: readonly Problem[];
}
