/**
 * HTTPRoute routing tests of gateway-api v1.6.1 conformance/tests (Apache-2.0), transcribed as data: the Go test's
 * waits and its ExpectedResponse table, case for case (httproute-simple-same-namespace.go, -cross-namespace.go,
 * -exact-path-matching.go, -matching.go, -matching-across-routes.go, -header-matching.go).
 */
import type { ExpectedResponse } from '../http.js';
import type { ConformanceCase, NN } from '../steps.js';

export const INFRA = 'gateway-conformance-infra';
export const WEB = 'gateway-conformance-web-backend';
export const APP = 'gateway-conformance-app-backend';
export const V1 = 'infra-backend-v1';
export const V2 = 'infra-backend-v2';
export const V3 = 'infra-backend-v3';
export const SAME_NS: NN = { namespace: INFRA, name: 'same-namespace' };

/** to is a case answered 200 by `backend` in `namespace` (infra by default). */
export const to = (
  path: string,
  backend: string,
  extra: { host?: string; headers?: Record<string, string>; namespace?: string } = {},
): ExpectedResponse => ({
  request: { path, ...(extra.host ? { host: extra.host } : {}), ...(extra.headers ? { headers: extra.headers } : {}) },
  backend,
  namespace: extra.namespace ?? INFRA,
});
/** status is a case answered `code` by the Gateway itself. */
export const status = (
  path: string,
  code: number,
  extra: { host?: string; headers?: Record<string, string> } = {},
): ExpectedResponse => ({
  request: { path, ...(extra.host ? { host: extra.host } : {}), ...(extra.headers ? { headers: extra.headers } : {}) },
  response: { statusCode: code },
});

/** routed is the usual opening: Gateway and routes accepted, ResolvedRefs true, then the table. */
export const routed = (name: string, gateway: NN, routes: NN[], cases: ExpectedResponse[]): ConformanceCase => ({
  name,
  steps: [
    { kind: 'accepted', gateway, routes },
    ...routes.map((route) => ({
      kind: 'routeCondition' as const,
      route,
      gateway,
      condition: { type: 'ResolvedRefs', status: 'True' as const, reason: 'ResolvedRefs' },
    })),
    { kind: 'requests', gateway, cases },
  ],
});

const infra = (name: string): NN => ({ namespace: INFRA, name });

export const routingCases: ConformanceCase[] = [
  routed('HTTPRouteSimpleSameNamespace', SAME_NS, [infra('gateway-conformance-infra-test')], [to('/', V1)]),
  routed(
    'HTTPRouteCrossNamespace',
    infra('backend-namespaces'),
    [{ namespace: WEB, name: 'cross-namespace' }],
    [to('/', 'web-backend', { namespace: WEB })],
  ),
  routed(
    'HTTPRouteExactPathMatching',
    SAME_NS,
    [infra('exact-matching')],
    [
      to('/one', V1),
      to('/two', V2),
      status('/', 404),
      status('/one/example', 404),
      status('/two/', 404),
      status('/Two', 404),
    ],
  ),
  routed(
    'HTTPRouteMatching',
    SAME_NS,
    [infra('matching')],
    [
      to('/', V1),
      to('/example', V1),
      to('/', V1, { headers: { Version: 'one' } }),
      to('/v2', V2),
      to('/v2/example', V2),
      to('/', V2, { headers: { Version: 'two' } }),
      to('/v2/', V2),
      to('/v2example', V1),
      to('/foo/v2/example', V1),
    ],
  ),
  routed(
    'HTTPRouteMatchingAcrossRoutes',
    SAME_NS,
    [infra('matching-part1'), infra('matching-part2')],
    [
      to('/', V1, { host: 'example.com' }),
      to('/example', V1, { host: 'example.com' }),
      to('/example', V1, { host: 'example.net' }),
      to('/example', V1, { host: 'example.com', headers: { Version: 'one' } }),
      to('/v2', V2, { host: 'example.com' }),
      to('/v2', V1, { host: 'example.net' }),
      to('/v2/example', V2, { host: 'example.com' }),
      to('/', V2, { host: 'example.com', headers: { Version: 'two' } }),
    ],
  ),
  routed(
    'HTTPRouteHeaderMatching',
    SAME_NS,
    [infra('header-matching')],
    [
      to('/', V1, { headers: { Version: 'one' } }),
      to('/', V2, { headers: { Version: 'two' } }),
      to('/', V1, { headers: { Version: 'two', Color: 'orange' } }),
      to('/', V2, { headers: { Version: 'two', Color: 'blue' } }),
      status('/', 404, { headers: { Color: 'orange' } }),
      status('/', 404, { headers: { 'Some-Other-Header': 'one' } }),
      to('/', V1, { headers: { Color: 'blue' } }),
      to('/', V1, { headers: { Color: 'green' } }),
      to('/', V2, { headers: { Color: 'red' } }),
      to('/', V2, { headers: { Color: 'yellow' } }),
      status('/', 404, { headers: { Color: 'purple' } }),
    ],
  ),
];
