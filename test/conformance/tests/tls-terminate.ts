/**
 * The TLSRoute Terminate and Mixed tests of gateway-api v1.6.1 conformance/tests (Apache-2.0), transcribed as data
 * (tlsroute-listener-terminate-supported-kinds.go, tlsroute-terminate-simple-same-namespace.go,
 * tlsroute-mixed-termination-same-namespace.go, and the two "not supported" tests, which return at once when the
 * feature is claimed). The traffic is conformance/utils/tcp's MakeTCPRequestAndExpectEventuallyValidResponse against
 * echo-basic's TCP server (stood in by ../echo.ts; the client is ../l4-clients.ts): TLS to the Gateway with the route's hostname as SNI, trusting the CA of
 * ConfigMap tls-checks-ca-certificate, then the server's welcome, PING, IS_TLS and TEST.
 */
import type { Harness } from '../harness.js';
import type { ConformanceCase, Cond, ListenerStatus, NN, Step, Timeouts } from '../steps.js';
import { expectTcpEventually, gatewayAddress, type TcpExpected } from '../l4-clients.js';
import { INFRA } from './httproute-routing.js';

const infra = (name: string): NN => ({ namespace: INFRA, name });
const GROUP = 'gateway.networking.k8s.io';
const ready: Step = { kind: 'namespaceReady', namespace: INFRA };
const tlsRoutesAccepted = (gateway: NN, routes: NN[]): Step => ({
  kind: 'accepted',
  routeKind: 'TLSRoute',
  gateway,
  routes,
});
const listeners = (gateway: NN, list: ListenerStatus[]): Step => ({
  kind: 'gatewayListeners',
  gateway,
  listeners: list,
});
const TLS_ROUTE_KIND = [{ group: GROUP, kind: 'TLSRoute' }];
const acceptedTrue: Cond = { type: 'Accepted', status: 'True', reason: 'Accepted' };

/**
 * tcpRequest is MakeTCPRequestAndExpectEventuallyValidResponse: to the Gateway's address and its first listener's port
 * (GatewayAndTLSRoutesMustBeAccepted's gwAddr), with `serverName` (the route's first hostname) as SNI, trusting the CA
 * of ConfigMap tls-checks-ca-certificate. A dial or read that fails is tried again until the time allowed; a wrong
 * answer fails at once, as Go's assertions do.
 */
const tcpRequest = (gateway: NN, serverName: string, expected: TcpExpected): Step => ({
  kind: 'client',
  what: `a TLS connection to ${serverName} reaches ${expected.backend}`,
  run: async (h: Harness, t: Timeouts) => {
    const address = await gatewayAddress(h, gateway, undefined, t.statusMs);
    const ca = (
      (await h.get('v1', 'ConfigMap', INFRA, 'tls-checks-ca-certificate')) as { data?: Record<string, string> } | null
    )?.data?.['ca.crt'];
    if (ca === undefined) throw new Error('ca.crt not found in configmap tls-checks-ca-certificate');
    await expectTcpEventually(address, { serverName, ca }, expected, t);
  },
});

const TERMINATE = infra('gateway-tlsroute-terminate');
const MIXED = infra('gateway-tlsroute-mixed-termination');

export const tlsTerminateCases: ConformanceCase[] = [
  {
    // tlsroute-listener-terminate-not-supported.go: returns at once when TLSRouteModeTerminate is claimed
    name: 'TLSRouteListenerTerminateNotSupported',
    steps: [],
  },
  {
    // tlsroute-listener-mixed-termination-not-supported.go: returns at once when TLSRouteModeMixed is claimed
    name: 'TLSRouteListenerMixedTerminationNotSupported',
    steps: [],
  },
  {
    // tlsroute-listener-terminate-supported-kinds.go
    name: 'TLSRouteListenerTerminateSupportedKinds',
    steps: [
      listeners(infra('gateway-tlsroute-terminate-supported'), [
        { name: 'tls-terminate', supportedKinds: TLS_ROUTE_KIND, conditions: [acceptedTrue], attachedRoutes: 0 },
      ]),
    ],
  },
  {
    // tlsroute-terminate-simple-same-namespace.go
    name: 'TLSRouteTerminateSimpleSameNamespace',
    steps: [
      ready,
      tlsRoutesAccepted(TERMINATE, [infra('tlsroute-terminated-test')]),
      // the route's one hostname; terminated on the Gateway: the backend sees plain bytes and no SNI
      tcpRequest(TERMINATE, 'tls.example.com', { backendIsTls: false, backend: 'tcp-backend', namespace: INFRA }),
    ],
  },
  {
    // tlsroute-mixed-termination-same-namespace.go
    name: 'TLSRouteMixedTerminationSameNamespace',
    steps: [
      ready,
      tlsRoutesAccepted(MIXED, [infra('gateway-conformance-mixed-passthroughroute')]),
      listeners(MIXED, [
        { name: 'tls-terminate', supportedKinds: TLS_ROUTE_KIND, conditions: [acceptedTrue], attachedRoutes: 1 },
        { name: 'tls-passthrough', supportedKinds: TLS_ROUTE_KIND, conditions: [acceptedTrue], attachedRoutes: 1 },
      ]),
      tlsRoutesAccepted(MIXED, [infra('gateway-conformance-mixed-terminateroute')]),
      tcpRequest(MIXED, 'tls.example.com', { backendIsTls: false, backend: 'tcp-backend', namespace: INFRA }),
      // passed through: the backend's own TLS server saw the SNI
      tcpRequest(MIXED, 'abc.example.com', {
        backendIsTls: true,
        backend: 'tcp-backend',
        namespace: INFRA,
        hostname: 'abc.example.com',
      }),
    ],
  },
];
