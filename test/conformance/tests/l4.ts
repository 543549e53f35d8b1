/**
 * TLSRoute, TCPRoute and UDPRoute tests of gateway-api v1.6.1 conformance/tests (Apache-2.0) that judge status and
 * refused connections, transcribed as data (tlsroute-*.go, tcproute-*.go, udproute-*.go). The ones that talk to
 * echo-basic's TCP, TLS or UDP servers are in l4-traffic.ts.
 */
import type { ConformanceCase, Cond, ListenerStatus, NN, RouteKind, Step } from '../steps.js';
import { INFRA } from './httproute-routing.js';

const infra = (name: string): NN => ({ namespace: INFRA, name });
const GROUP = 'gateway.networking.k8s.io';
const ready: Step = { kind: 'namespaceReady', namespace: INFRA };
const routeCondition = (routeKind: RouteKind, route: NN, gateway: NN, condition: Cond): Step => ({
  kind: 'routeCondition',
  routeKind,
  route,
  gateway,
  condition,
});
const noAcceptedParents = (routeKind: RouteKind, route: NN): Step => ({
  kind: 'routeNoAcceptedParents',
  routeKind,
  route,
});
const zeroRoutes = (gateway: NN): Step => ({ kind: 'gatewayZeroRoutes', gateway });
const accepted = (routeKind: RouteKind, gateway: NN, routes: NN[], listeners?: string[]): Step => ({
  kind: 'accepted',
  routeKind,
  gateway,
  routes,
  ...(listeners ? { listeners } : {}),
});
const resolvedRefsFalse = (reason: string): Cond => ({ type: 'ResolvedRefs', status: 'False', reason });
const acceptedFalse = (reason: string): Cond => ({ type: 'Accepted', status: 'False', reason });
const listeners = (gateway: NN, list: ListenerStatus[]): Step => ({
  kind: 'gatewayListeners',
  gateway,
  listeners: list,
});

const TLS_BACKEND_NONEXISTENT = infra('gateway-tlsroute-invalid-backend-ref-nonexistent');
const TLS_UNKNOWN_KIND = infra('gateway-tlsroute-invalid-backend-ref-unknown-kind');
const TLS_HTTP_ONLY = infra('gateway-tlsroute-http-only');
const TLS_HTTPS_ONLY = infra('gateway-tlsroute-https-only');
const TLS_PASSTHROUGH_ONLY = infra('gateway-tlsroute-tls-passthrough-only');
const TLS_EXACT = infra('gateway-tls-exact-hostname');
const TLS_WILDCARD = infra('gateway-tls-wildcard-hostname');

export const l4Cases: ConformanceCase[] = [
  {
    // tlsroute-invalid-backendref-nonexistent.go
    name: 'TLSRouteInvalidBackendRefNonexistent',
    steps: [
      ready,
      accepted('TLSRoute', TLS_BACKEND_NONEXISTENT, [infra('invalid-backend-ref-nonexistent')]),
      routeCondition(
        'TLSRoute',
        infra('invalid-backend-ref-nonexistent'),
        TLS_BACKEND_NONEXISTENT,
        resolvedRefsFalse('BackendNotFound'),
      ),
      // the route's first hostname (GatewayAndTLSRoutesMustBeAccepted gives it), from the manifest
      { kind: 'tlsRejected', gateway: TLS_BACKEND_NONEXISTENT, serverName: 'example.com' },
    ],
  },
  {
    // tlsroute-invalid-backendref-unknown-kind.go
    name: 'TLSRouteInvalidBackendRefUnknownKind',
    steps: [
      ready,
      accepted('TLSRoute', TLS_UNKNOWN_KIND, [infra('invalid-backend-ref-unknown-kind')]),
      routeCondition(
        'TLSRoute',
        infra('invalid-backend-ref-unknown-kind'),
        TLS_UNKNOWN_KIND,
        resolvedRefsFalse('InvalidKind'),
      ),
      { kind: 'tlsRejected', gateway: TLS_UNKNOWN_KIND, serverName: 'example.com' },
    ],
  },
  {
    // tlsroute-invalid-reference-grant.go
    name: 'TLSRouteInvalidReferenceGrant',
    steps: [
      accepted('TLSRoute', infra('gateway-tlsroute-referencegrant'), [infra('gateway-conformance-infra-test')]),
      routeCondition(
        'TLSRoute',
        infra('gateway-conformance-infra-test'),
        infra('gateway-tlsroute-referencegrant'),
        resolvedRefsFalse('RefNotPermitted'),
      ),
    ],
  },
  {
    // tlsroute-invalid-no-matching-listener.go
    name: 'TLSRouteInvalidNoMatchingListener',
    steps: [
      ready,
      routeCondition(
        'TLSRoute',
        infra('tlsroute-not-allowed-protocol-http'),
        TLS_HTTP_ONLY,
        acceptedFalse('NotAllowedByListeners'),
      ),
      routeCondition(
        'TLSRoute',
        infra('tlsroute-not-allowed-protocol-https'),
        TLS_HTTPS_ONLY,
        acceptedFalse('NotAllowedByListeners'),
      ),
      routeCondition(
        'TLSRoute',
        infra('tlsroute-no-matching-section-name'),
        TLS_PASSTHROUGH_ONLY,
        acceptedFalse('NoMatchingParent'),
      ),
      noAcceptedParents('TLSRoute', infra('tlsroute-not-allowed-protocol-http')),
      noAcceptedParents('TLSRoute', infra('tlsroute-not-allowed-protocol-https')),
      noAcceptedParents('TLSRoute', infra('tlsroute-no-matching-section-name')),
      zeroRoutes(TLS_HTTP_ONLY),
      zeroRoutes(TLS_HTTPS_ONLY),
    ],
  },
  {
    // tlsroute-invalid-no-matching-listener-hostname.go
    name: 'TLSRouteInvalidNoMatchingListenerHostname',
    steps: [
      ready,
      routeCondition(
        'TLSRoute',
        infra('tlsroute-hostname-mismatch-1'),
        TLS_EXACT,
        acceptedFalse('NoMatchingListenerHostname'),
      ),
      routeCondition(
        'TLSRoute',
        infra('tlsroute-hostname-mismatch-2'),
        TLS_WILDCARD,
        acceptedFalse('NoMatchingListenerHostname'),
      ),
      noAcceptedParents('TLSRoute', infra('tlsroute-hostname-mismatch-1')),
      noAcceptedParents('TLSRoute', infra('tlsroute-hostname-mismatch-2')),
      zeroRoutes(TLS_EXACT),
      zeroRoutes(TLS_WILDCARD),
    ],
  },
  {
    // tlsroute-listener-passthrough-supported-kinds.go
    name: 'TLSRouteListenerPassthroughSupportedKinds',
    steps: [
      listeners(infra('gateway-tlsroute-passthrough-supported-kind'), [
        {
          name: 'tls-passthrough',
          supportedKinds: [{ group: GROUP, kind: 'TLSRoute' }],
          conditions: [resolvedRefsFalse('InvalidRouteKinds')],
          attachedRoutes: 0,
        },
      ]),
    ],
  },
  // tlsroute-listener-terminate-not-supported.go: tests/tls-terminate.ts (TLSRouteModeTerminate is claimed)
  {
    // tcproute-invalid-backendref-nonexistent.go
    name: 'TCPRouteInvalidBackendRefNonexistent',
    steps: [
      ready,
      routeCondition(
        'TCPRoute',
        infra('tcp-route-invalid-backend-ref-nonexistent'),
        infra('tcp-gateway-invalid-backend'),
        resolvedRefsFalse('BackendNotFound'),
      ),
    ],
  },
  {
    // tcproute-invalid-cross-namespace-backend-ref.go
    name: 'TCPRouteInvalidCrossNamespaceBackendRef',
    steps: [
      ready,
      accepted(
        'TCPRoute',
        infra('tcp-invalid-cross-namespace-backend-ref-gateway'),
        [infra('tcp-invalid-cross-namespace-backend-ref')],
        ['tcp'],
      ),
      routeCondition(
        'TCPRoute',
        infra('tcp-invalid-cross-namespace-backend-ref'),
        infra('tcp-invalid-cross-namespace-backend-ref-gateway'),
        resolvedRefsFalse('RefNotPermitted'),
      ),
    ],
  },
  {
    // tcproute-invalid-non-tcp-listener.go
    name: 'TCPRouteInvalidNonTCPListener',
    steps: [
      ready,
      routeCondition(
        'TCPRoute',
        infra('tcp-route'),
        infra('tcp-mixed-protocol-gateway'),
        acceptedFalse('NotAllowedByListeners'),
      ),
      zeroRoutes(infra('tcp-mixed-protocol-gateway')),
    ],
  },
  {
    // udproute-invalid-backendref-nonexistent.go
    name: 'UDPRouteInvalidBackendRefNonexistent',
    steps: [
      ready,
      routeCondition(
        'UDPRoute',
        infra('udp-route-invalid-backend-ref-nonexistent'),
        infra('udp-gateway-invalid-backend'),
        resolvedRefsFalse('BackendNotFound'),
      ),
    ],
  },
  {
    // udproute-invalid-cross-namespace-backend-ref.go
    name: 'UDPRouteInvalidCrossNamespaceBackendRef',
    steps: [
      ready,
      accepted('UDPRoute', infra('udp-gateway-invalid-cross-namespace-backend-ref'), [
        infra('udp-route-invalid-cross-namespace-backend-ref'),
      ]),
      routeCondition(
        'UDPRoute',
        infra('udp-route-invalid-cross-namespace-backend-ref'),
        infra('udp-gateway-invalid-cross-namespace-backend-ref'),
        resolvedRefsFalse('RefNotPermitted'),
      ),
    ],
  },
  {
    // udproute-not-allowed-by-listeners.go
    name: 'UDPRouteNotAllowedByListeners',
    steps: [
      ready,
      routeCondition(
        'UDPRoute',
        infra('udproute-not-allowed-by-listeners'),
        infra('udproute-tls-only-gateway'),
        acceptedFalse('NotAllowedByListeners'),
      ),
      zeroRoutes(infra('udproute-tls-only-gateway')),
    ],
  },
];
