/**
 * HTTPRoute tests of gateway-api v1.6.1 conformance/tests (Apache-2.0) about refused references and the rest of the
 * core HTTPRoute set, transcribed as data (httproute-invalid-*.go, -partially-invalid-via-invalid-reference-grant.go, -multiple-gateways.go, -omitted-backendrefs.go,
 * -path-match-order.go, -redirect-host-and-status.go, -service-types.go, -https-listener.go).
 */
import type { ConformanceCase, Cond, NN, Step } from '../steps.js';
import { APP, INFRA, routed, SAME_NS, status, to, V1, V2, V3, WEB } from './httproute-routing.js';

const infra = (name: string): NN => ({ namespace: INFRA, name });
const condition = (route: NN, gateway: NN, c: Cond): Step => ({ kind: 'routeCondition', route, gateway, condition: c });
const resolved = (route: NN, gateway: NN) =>
  condition(route, gateway, { type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs' });
const answers500 = (path: string): Step => ({
  kind: 'requests',
  gateway: SAME_NS,
  cases: [{ request: { method: 'GET', path }, response: { statusCode: 500 } }],
});

/** refused: the route is accepted, its ResolvedRefs is False for `reason`, and the request is answered 500 */
const refused = (name: string, route: NN, reason: string, path: string): ConformanceCase => ({
  name,
  steps: [
    { kind: 'accepted', gateway: SAME_NS, routes: [route] },
    condition(route, SAME_NS, { type: 'ResolvedRefs', status: 'False', reason }),
    answers500(path),
  ],
});

/** unattached: the route's Accepted is False for `reason`, no parent accepts it, the Gateway has no route */
const unattached = (name: string, route: NN, reason: string, resolvedFirst: boolean): ConformanceCase => ({
  name,
  steps: [
    ...(resolvedFirst ? [resolved(route, SAME_NS)] : []),
    condition(route, SAME_NS, { type: 'Accepted', status: 'False', reason }),
    { kind: 'routeNoAcceptedParents', route },
    { kind: 'gatewayZeroRoutes', gateway: SAME_NS },
  ],
});

export const invalidCases: ConformanceCase[] = [
  refused('HTTPRouteInvalidBackendRefUnknownKind', infra('invalid-backend-ref-unknown-kind'), 'InvalidKind', '/v2'),
  refused(
    'HTTPRouteInvalidCrossNamespaceBackendRef',
    infra('invalid-cross-namespace-backend-ref'),
    'RefNotPermitted',
    '/',
  ),
  refused('HTTPRouteInvalidNonExistentBackendRef', infra('invalid-nonexistent-backend-ref'), 'BackendNotFound', '/'),
  {
    name: 'HTTPRouteInvalidReferenceGrant',
    steps: [
      { kind: 'accepted', gateway: SAME_NS, routes: [infra('reference-grant')] },
      condition(infra('reference-grant'), SAME_NS, {
        type: 'ResolvedRefs',
        status: 'False',
        reason: 'RefNotPermitted',
      }),
      {
        kind: 'requests',
        gateway: SAME_NS,
        cases: [
          {
            request: { method: 'GET', path: '/' },
            response: { statusCode: 500 },
            backend: 'web-backend',
            namespace: WEB,
          },
        ],
      },
    ],
  },
  {
    name: 'HTTPRoutePartiallyInvalidViaInvalidReferenceGrant',
    steps: [
      { kind: 'accepted', gateway: SAME_NS, routes: [infra('invalid-reference-grant')] },
      condition(infra('invalid-reference-grant'), SAME_NS, {
        type: 'ResolvedRefs',
        status: 'False',
        reason: 'RefNotPermitted',
      }),
      answers500('/v2'),
      {
        kind: 'requests',
        gateway: SAME_NS,
        cases: [
          {
            request: { method: 'GET', path: '/' },
            response: { statusCode: 200 },
            backend: 'app-backend-v1',
            namespace: APP,
          },
        ],
      },
    ],
  },
  unattached(
    'HTTPRouteInvalidCrossNamespaceParentRef',
    { namespace: WEB, name: 'invalid-cross-namespace-parent-ref' },
    'NotAllowedByListeners',
    true,
  ),
  unattached(
    'HTTPRouteInvalidParentRefNotMatchingSectionName',
    infra('httproute-listener-not-matching-section-name'),
    'NoMatchingParent',
    false,
  ),
  {
    name: 'HTTPRouteMultipleGateways',
    steps: [
      {
        kind: 'accepted',
        gateway: SAME_NS,
        routes: [infra('multiple-gateways-shared-route'), infra('same-namespace-dedicated-route')],
      },
      { kind: 'requests', gateway: SAME_NS, cases: [to('/shared', V1), to('/', V2)] },
      {
        kind: 'accepted',
        gateway: infra('all-namespaces'),
        routes: [infra('multiple-gateways-shared-route'), infra('all-namespaces-dedicated-route')],
      },
      { kind: 'requests', gateway: infra('all-namespaces'), cases: [to('/shared', V1), to('/', V3)] },
    ],
  },
  routed(
    'HTTPRouteNoBackendRefs',
    SAME_NS,
    [infra('omitted-backendrefs')],
    [to('/forward', V1), status('/omitted-no-forward', 500), status('/empty-no-forward', 500)],
  ),
  routed(
    'HTTPRoutePathMatchOrder',
    SAME_NS,
    [infra('path-matching-order')],
    [
      to('/match/exact/one', V3),
      to('/match/exact', V2),
      to('/match', V1),
      to('/match/prefix/one/any', V2),
      to('/match/prefix/any', V1),
      to('/match/any', V3),
    ],
  ),
  routed(
    'HTTPRouteRedirectHostAndStatus',
    SAME_NS,
    [infra('redirect-host-and-status')],
    [
      {
        request: { path: '/hostname-redirect', unfollowRedirect: true },
        response: { statusCode: 302 },
        redirectRequest: { host: 'example.org' },
        namespace: INFRA,
      },
      {
        request: { path: '/host-and-status', unfollowRedirect: true },
        response: { statusCode: 301 },
        redirectRequest: { host: 'example.org' },
        namespace: INFRA,
      },
    ],
  ),
  {
    name: 'HTTPRouteServiceTypes',
    steps: [
      { kind: 'accepted', gateway: SAME_NS, routes: [infra('service-types')] },
      resolved(infra('service-types'), SAME_NS),
      {
        kind: 'podsIntoSlices',
        namespace: INFRA,
        slices: ['manual-endpointslices', 'headless-manual-endpointslices'],
        deployment: V1,
      },
      {
        kind: 'requests',
        gateway: SAME_NS,
        cases: ['/manual-endpointslices', '/headless-manual-endpointslices', '/headless'].map((path) => ({
          request: { path },
          response: { statusCode: 200 },
          backend: V1,
          namespace: INFRA,
        })),
      },
    ],
  },
  {
    name: 'HTTPRouteHTTPSListener',
    steps: (() => {
      const gw = infra('same-namespace-with-https-listener');
      const routes = [infra('httproute-https-test'), infra('httproute-https-test-no-hostname')];
      return [
        { kind: 'accepted' as const, gateway: gw, routes },
        ...routes.map((r) => resolved(r, gw)),
        {
          kind: 'requests' as const,
          gateway: gw,
          scheme: 'https' as const,
          cases: [
            {
              request: { host: 'example.org', path: '/' },
              response: { statusCode: 200 },
              backend: V1,
              namespace: INFRA,
            },
            { request: { host: 'unknown-example.org', path: '/' }, response: { statusCode: 404 }, namespace: INFRA },
            {
              request: { host: 'second-example.org', path: '/' },
              response: { statusCode: 200 },
              backend: V2,
              namespace: INFRA,
            },
          ],
        },
      ];
    })(),
  },
];
