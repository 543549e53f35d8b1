/**
 * The HTTP extended features of issue 31, from gateway-api v1.6.1 conformance/tests (Apache-2.0), transcribed as
 * data: gateway-with-attached-routes.go (…WithPort8080), httproute-redirect-port-and-scheme.go, httproute-named-rule.go,
 * grpcroute-named-rule.go, httproute-backend-protocol-websocket.go,
 * httproute-cors.go, httproute-request-header-modifier.go (…Backend…), -request-header-modifier-backend-weights.go,
 * httproute-https-listener-detect-misdirected-requests.go, httproute-listener-port-matching.go,
 * httproute-invalid-parentref-not-matching-listener-port.go, -invalid-parentref-section-name-not-matching-port.go,
 * httproute-request-percentage-mirror.go.
 */
import type { ExpectedResponse } from '../http.js';
import type { ConformanceCase, NN, Step } from '../steps.js';
import { hostCases } from './httproute-hosts.js';
import { INFRA, SAME_NS } from './httproute-routing.js';

const infra = (name: string): NN => ({ namespace: INFRA, name });
const HTTPROUTE = [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }];
const acceptedResolved = [
  { type: 'Accepted', status: 'True' as const },
  { type: 'ResolvedRefs', status: 'True' as const },
];
const resolved = (route: NN, gateway: NN): Step => ({
  kind: 'routeCondition',
  route,
  gateway,
  condition: { type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs' },
});

/** a 302 to `to` (Go: RedirectRequest; an absent port is the scheme's), for the request to `path` (and `host`) */
const redirect302 = (path: string, to: { scheme: string; port?: string }, host?: string): ExpectedResponse => ({
  request: { path, unfollowRedirect: true, ...(host ? { host } : {}) },
  response: { statusCode: 302 },
  redirectRequest: { ...to, host: 'example.org' },
  namespace: INFRA,
});

/** a CORS preflight to `path`, answered by the Gateway itself (Go: an empty expected request, no namespace) */
const preflight = (
  testCaseName: string,
  path: string,
  headers: Record<string, string>,
  response: NonNullable<ExpectedResponse['response']>,
): ExpectedResponse => ({
  testCaseName,
  request: { path, method: 'OPTIONS', headers },
  expectedRequest: { host: '', method: 'OPTIONS', path: '' },
  namespace: '',
  response,
});
/** a CORS request that reaches the backend */
const corsRequest = (
  testCaseName: string,
  path: string,
  method: string,
  headers: Record<string, string>,
  response: NonNullable<ExpectedResponse['response']>,
): ExpectedResponse => ({ testCaseName, request: { path, method, headers }, namespace: INFRA, response });
const FOO_ASKS = {
  Origin: 'https://www.foo.com',
  'access-control-request-method': 'GET',
  'access-control-request-headers': 'x-header-1, x-header-2',
};
/** the answer of cors-1 to an allowed preflight from `origin` */
const cors1Allowed = (origin: string) => ({
  'access-control-allow-origin': [origin],
  'access-control-allow-methods': ['GET, OPTIONS', 'OPTIONS, GET'],
  'access-control-allow-headers': ['x-header-1, x-header-2', 'x-header-2, x-header-1'],
  'access-control-expose-headers': ['x-header-3, x-header-4', 'x-header-4, x-header-3'],
  'access-control-max-age': ['3600'],
  'access-control-allow-credentials': ['true'],
});

/** HTTPRouteHTTPSListenerDetectMisdirectedRequests' table: TLS server name, Host, status and the backend */
const MISDIRECTED: [string, string, number, string?][] = [
  ['example.org', 'example.org', 200, 'infra-backend-v1'],
  ['example.org', 'second-example.org', 421],
  ['example.org', 'unknown-example.org', 404],
  ['second-example.org', 'second-example.org', 200, 'infra-backend-v2'],
  ['second-example.org', 'example.org', 421],
  ['second-example.org', 'unknown-example.org', 421],
  ['third-example.wildcard.org', 'third-example.wildcard.org', 200, 'infra-backend-v3'],
  ['third-example.wildcard.org', 'fith-example.wildcard.org', 200, 'infra-backend-v3'],
  ['third-example.wildcard.org', 'fourth-example.wildcard.org', 421],
  ['third-example.wildcard.org', 'second-example.org', 421],
  ['third-example.wildcard.org', 'unknown-example.org', 421],
  ['fourth-example.wildcard.org', 'fourth-example.wildcard.org', 200, 'infra-backend-v1'],
  ['fourth-example.wildcard.org', 'fith-example.wildcard.org', 421],
  ['unknown-example.org', 'example.org', 200, 'infra-backend-v1'],
  ['unknown-example.org', 'unknown-example.org', 404],
];
const MISDIRECTED_ROUTES = [1, 2, 3, 4].map((n) => infra(`https-listener-detect-misdirected-requests-test-${n}`));

/** a request to `path` answered by V1 and mirrored to V2 `percent` times in a hundred */
const percentMirror = (path: string, percent: number): ExpectedResponse => ({
  request: { path },
  expectedRequest: { path },
  backend: 'infra-backend-v1',
  namespace: INFRA,
  mirroredTo: [{ name: 'infra-backend-v2', namespace: INFRA, percent }],
});

const PORT_MATCHING = infra('httproute-listener-port-matching');

/** the invalid-parentRef-port tests: the route not accepted (NoMatchingParent), and no route on the Gateway */
const notMatchingPort = (name: string, route: string, gateway: string, resolvedFirst: boolean): ConformanceCase => ({
  name,
  steps: [
    ...(resolvedFirst ? [resolved(infra(route), infra(gateway))] : []),
    {
      kind: 'routeCondition',
      route: infra(route),
      gateway: infra(gateway),
      condition: { type: 'Accepted', status: 'False', reason: 'NoMatchingParent' },
    },
    { kind: 'routeNoAcceptedParents', route: infra(route) },
    { kind: 'gatewayZeroRoutes', gateway: infra(gateway) },
  ],
});

const ON_8080 = infra('same-namespace-with-http-listener-on-8080');
const ON_443 = infra('same-namespace-with-https-listener');

export const httpFeatureCases: ConformanceCase[] = [
  {
    // HTTP/1.1 here where Go speaks HTTP/2 (H2Protocol): the server name and Host are the same two names either way
    name: 'HTTPRouteHTTPSListenerDetectMisdirectedRequests',
    steps: [
      { kind: 'accepted', gateway: infra('same-namespace-with-https-listener'), routes: MISDIRECTED_ROUTES },
      ...MISDIRECTED_ROUTES.map((r) => resolved(r, infra('same-namespace-with-https-listener'))),
      {
        kind: 'requests',
        gateway: infra('same-namespace-with-https-listener'),
        scheme: 'https',
        cases: MISDIRECTED.map(([serverName, host, code, backend]) => ({
          request: { host, serverName, path: '/detect-misdirected-requests' },
          response: { statusCodes: [code] },
          ...(backend ? { backend } : {}),
          namespace: INFRA,
        })),
      },
    ],
  },
  // httproute-request-header-modifier.go: HTTPRouteRequestHeaderModifier's test on a manifest whose backendRefs carry
  // the filters (the same route name)
  {
    name: 'HTTPRouteBackendRequestHeaderModifier',
    steps: hostCases.find((c) => c.name === 'HTTPRouteRequestHeaderModifier')!.steps,
  },
  {
    name: 'HTTPRouteRequestHeaderModifierBackendWeights',
    steps: [
      { kind: 'accepted', gateway: SAME_NS, routes: [infra('request-header-modifier-backend-weights')] },
      resolved(infra('request-header-modifier-backend-weights'), SAME_NS),
      {
        kind: 'headerNamesPod',
        gateway: SAME_NS,
        expected: { request: { path: '/' }, response: { statusCode: 200 }, namespace: INFRA },
        header: 'Backend',
        times: 100,
      },
    ],
  },
  {
    name: 'GatewayWithAttachedRoutesWithPort8080',
    steps: [
      {
        kind: 'gatewayListeners',
        gateway: infra('gateway-with-two-listeners-and-one-attached-route'),
        listeners: [
          { name: 'http-unattached', supportedKinds: HTTPROUTE, attachedRoutes: 0, conditions: acceptedResolved },
          { name: 'http', supportedKinds: HTTPROUTE, attachedRoutes: 1, conditions: acceptedResolved },
        ],
      },
    ],
  },
  {
    name: 'HTTPRouteRedirectPortAndScheme',
    steps: [
      { kind: 'accepted', gateway: SAME_NS, routes: [infra('http-route-for-listener-on-port-80')] },
      resolved(infra('http-route-for-listener-on-port-80'), SAME_NS),
      { kind: 'accepted', gateway: ON_8080, routes: [infra('http-route-for-listener-on-port-8080')] },
      resolved(infra('http-route-for-listener-on-port-8080'), ON_8080),
      { kind: 'accepted', gateway: ON_443, routes: [infra('http-route-for-listener-on-port-443')] },
      resolved(infra('http-route-for-listener-on-port-443'), ON_443),
      {
        kind: 'requests',
        gateway: SAME_NS,
        cases: [
          redirect302('/scheme-nil-and-port-nil', { scheme: 'http' }),
          redirect302('/scheme-nil-and-port-80', { scheme: 'http' }),
          redirect302('/scheme-nil-and-port-8080', { scheme: 'http', port: '8080' }),
          redirect302('/scheme-https-and-port-nil', { scheme: 'https' }),
          redirect302('/scheme-https-and-port-443', { scheme: 'https' }),
          redirect302('/scheme-https-and-port-8443', { scheme: 'https', port: '8443' }),
        ],
      },
      {
        kind: 'requests',
        gateway: ON_8080,
        cases: [
          redirect302('/scheme-nil-and-port-nil', { scheme: 'http', port: '8080' }),
          redirect302('/scheme-nil-and-port-80', { scheme: 'http' }),
          redirect302('/scheme-https-and-port-nil', { scheme: 'https' }),
        ],
      },
      {
        kind: 'requests',
        gateway: ON_443,
        scheme: 'https',
        cases: [
          redirect302('/scheme-nil-and-port-nil', { scheme: 'https' }, 'example.org'),
          redirect302('/scheme-nil-and-port-443', { scheme: 'https' }, 'example.org'),
          redirect302('/scheme-nil-and-port-8443', { scheme: 'https', port: '8443' }, 'example.org'),
          redirect302('/scheme-http-and-port-nil', { scheme: 'http' }, 'example.org'),
          redirect302('/scheme-http-and-port-80', { scheme: 'http' }, 'example.org'),
          redirect302('/scheme-http-and-port-8080', { scheme: 'http', port: '8080' }, 'example.org'),
        ],
      },
    ],
  },
  {
    name: 'HTTPRouteNamedRule',
    steps: [
      { kind: 'accepted', gateway: SAME_NS, routes: [infra('http-named-rules')] },
      resolved(infra('http-named-rules'), SAME_NS),
      {
        kind: 'requests',
        gateway: SAME_NS,
        cases: ['/named', '/unnamed'].map((path) => ({
          request: { path },
          response: { statusCode: 200 },
          namespace: INFRA,
        })),
      },
    ],
  },
  {
    name: 'GRPCRouteNamedRule',
    steps: [
      { kind: 'accepted', gateway: SAME_NS, routes: [infra('grpc-named-rules')], routeKind: 'GRPCRoute' },
      {
        kind: 'grpcRequests',
        gateway: SAME_NS,
        cases: [
          { method: 'Echo', backend: 'grpc-infra-backend-v1', namespace: INFRA },
          { method: 'EchoTwo', backend: 'grpc-infra-backend-v2', namespace: INFRA },
        ],
      },
    ],
  },
  {
    name: 'HTTPRouteBackendProtocolWebSocket',
    steps: [
      { kind: 'accepted', gateway: SAME_NS, routes: [infra('backend-protocol-ws')] },
      {
        kind: 'websocket',
        gateway: SAME_NS,
        origin:
          'ws://gateway/TestConformance/HTTPRouteBackendProtocolWebSocket/websocket_connection_should_reach_backend',
      },
    ],
  },
  {
    name: 'HTTPRouteCORS',
    steps: [
      {
        kind: 'accepted',
        gateway: SAME_NS,
        routes: [infra('cors-multiple-origins-methods-headers'), infra('cors-wildcard-methods')],
      },
      ...[
        'cors-multiple-origins-methods-headers',
        'cors-wildcard-methods',
        'cors-wildcard-origin',
        'cors-wildcard-methods-headers',
      ].map((name) => resolved(infra(name), SAME_NS)),
      {
        kind: 'requests',
        gateway: SAME_NS,
        cases: [
          preflight('CORS preflight request from an exact matching origin should be allowed', '/cors-1', FOO_ASKS, {
            statusCodes: [200, 204],
            validHeaderValues: cors1Allowed('https://www.foo.com'),
            ignoreWhitespace: true,
          }),
          preflight(
            'CORS preflight request from a wildcard matching origin should be allowed',
            '/cors-1',
            { ...FOO_ASKS, Origin: 'https://www.bar.com' },
            { statusCode: 200, validHeaderValues: cors1Allowed('https://www.bar.com'), ignoreWhitespace: true },
          ),
          preflight(
            "CORS preflight request from a wildcard matching any number of periods left to '*' should be allowed",
            '/cors-1',
            { ...FOO_ASKS, Origin: 'https://xpto.www.bar.com' },
            { statusCode: 200, validHeaderValues: cors1Allowed('https://xpto.www.bar.com'), ignoreWhitespace: true },
          ),
          preflight(
            'CORS preflight request from a non-matching origin should not be allowed',
            '/cors-1',
            { Origin: 'https://foobar.com', 'access-control-request-method': 'GET' },
            { statusCodes: [200, 204, 403], absentHeaders: ['access-control-allow-origin'] },
          ),
          corsRequest('Simple request from an exact matching origin should be allowed', '/cors-1', 'GET', FOO_ASKS, {
            statusCodes: [200, 204],
            headers: { 'access-control-allow-origin': 'https://www.foo.com' },
          }),
          corsRequest(
            'Simple request from a wildcard matching origin should be allowed',
            '/cors-1',
            'GET',
            { ...FOO_ASKS, Origin: 'https://www.bar.com' },
            { statusCodes: [200, 204], headers: { 'access-control-allow-origin': 'https://www.bar.com' } },
          ),
          corsRequest(
            'Simple request from a non-matching origin should not be allowed',
            '/cors-1',
            'GET',
            { Origin: 'https://foobar.com', 'access-control-request-method': 'GET' },
            { absentHeaders: ['access-control-allow-origin'] },
          ),
          preflight(
            'CORS preflight request with POST method should be allowed by allowMethods with wildcard',
            '/cors-2',
            { Origin: 'https://www.foo.com', 'access-control-request-method': 'POST' },
            {
              statusCodes: [200, 204],
              validHeaderValues: { 'access-control-allow-methods': ['POST', '*'] },
              headers: { 'access-control-allow-origin': 'https://www.foo.com' },
              absentHeaders: ['access-control-allow-credentials'],
            },
          ),
          preflight(
            'CORS preflight request should not receive access-control-allow-credentials header without access-control-allow-credentials set to true',
            '/cors-2',
            { Origin: 'https://www.foo.com', 'access-control-request-method': 'POST' },
            { absentHeaders: ['Access-Control-Allow-Credentials'] },
          ),
          ...['https://foobar.com', 'https://foobar.com:12345'].map((origin) =>
            preflight(
              `Pre-flight request from a wildcard origin${origin.includes(':12345') ? ' containing a port' : ''} should return header with '*' or with the requested Origin`,
              '/cors-wildcard-origin',
              { Origin: origin, 'access-control-request-method': 'PUT' },
              {
                statusCodes: [200, 204],
                validHeaderValues: {
                  'access-control-allow-origin': [origin, '*'],
                  'access-control-allow-methods': ['PUT'],
                },
                absentHeaders: ['Access-Control-Allow-Credentials'],
              },
            ),
          ),
          corsRequest(
            "Request from a wildcard origin containing a port should return header with '*' or with the requested Origin",
            '/cors-wildcard-origin',
            'PUT',
            { Origin: 'https://foobar.com:12345' },
            {
              statusCodes: [200],
              validHeaderValues: { 'access-control-allow-origin': ['https://foobar.com:12345', '*'] },
            },
          ),
          corsRequest(
            "Simple request from a wildcard origin should return header with '*' or with the requested Origin",
            '/cors-wildcard-origin',
            'PUT',
            { Origin: 'https://foobar.com' },
            {
              statusCode: 200,
              validHeaderValues: { 'access-control-allow-origin': ['https://foobar.com', '*'] },
              absentHeaders: ['Access-Control-Allow-Credentials'],
            },
          ),
          preflight(
            'CORS preflight request requesting specific method and headers should be allowed and always echo the origin with allowCredentials set to true',
            '/cors-wildcard-methods-headers',
            {
              Origin: 'https://other.foo.com',
              'access-control-request-method': 'PUT',
              'access-control-request-headers': 'x-header-1, x-header-2',
            },
            {
              statusCodes: [200, 204],
              validHeaderValues: {
                'access-control-allow-origin': ['https://other.foo.com'],
                'access-control-allow-methods': ['PUT'],
                'access-control-allow-headers': ['x-header-1, x-header-2', 'x-header-2, x-header-1'],
                'access-control-allow-credentials': ['true'],
              },
              ignoreWhitespace: true,
            },
          ),
          preflight(
            'CORS preflight request requesting specific method and headers should hide access-control-allow-credentials headers with allowCredentials set to false',
            '/cors-wildcard-methods-headers-unauth',
            {
              Origin: 'https://other.foo.com',
              'access-control-request-method': 'PUT',
              'access-control-request-headers': 'x-header-1, x-header-2',
            },
            {
              statusCodes: [200, 204],
              validHeaderValues: {
                'access-control-allow-origin': ['https://other.foo.com', '*'],
                'access-control-allow-methods': ['PUT', '*'],
                'access-control-allow-headers': ['x-header-1, x-header-2', 'x-header-2, x-header-1', '*'],
              },
              absentHeaders: ['access-control-allow-credentials'],
              ignoreWhitespace: true,
            },
          ),
          corsRequest(
            'CORS request should receive access-control-allow-credentials header with allowCredentials set to true',
            '/cors-wildcard-methods-headers',
            'GET',
            { Origin: 'https://other.foo.com' },
            {
              statusCode: 200,
              validHeaderValues: {
                'access-control-allow-origin': ['https://other.foo.com'],
                'access-control-allow-credentials': ['true'],
              },
            },
          ),
          corsRequest(
            'CORS request should not receive access-control-allow-credentials header without allowCredentials set to true',
            '/cors-wildcard-methods-headers-unauth',
            'GET',
            { Origin: 'https://other.foo.com' },
            {
              statusCode: 200,
              validHeaderValues: { 'access-control-allow-origin': ['https://other.foo.com', '*'] },
              absentHeaders: ['access-control-allow-credentials'],
            },
          ),
        ],
      },
    ],
  },
  {
    name: 'HTTPRouteListenerPortMatching',
    steps: [
      { kind: 'namespaceReady', namespace: INFRA },
      ...(
        [
          ['listener-1', 'backend-v1'],
          ['listener-2', 'backend-v2'],
          ['listener-4', 'backend-v3'],
        ] as const
      ).flatMap(([listener, route]): Step[] => [
        { kind: 'accepted', gateway: PORT_MATCHING, listeners: [listener], routes: [infra(route)] },
        resolved(infra(route), PORT_MATCHING),
      ]),
      {
        kind: 'requests',
        gateway: PORT_MATCHING,
        listener: 'listener-1',
        cases: [{ request: { host: 'foo.com', path: '/' }, backend: 'infra-backend-v1', namespace: INFRA }],
      },
      {
        kind: 'requests',
        gateway: PORT_MATCHING,
        listener: 'listener-2',
        cases: ['foo.com:8080', 'bar.com:8080'].map((host) => ({
          request: { host, path: '/' },
          backend: 'infra-backend-v2',
          namespace: INFRA,
        })),
      },
      {
        kind: 'requests',
        gateway: PORT_MATCHING,
        listener: 'listener-4',
        cases: [
          { request: { host: 'foo.com:8090', path: '/' }, backend: 'infra-backend-v3', namespace: INFRA },
          { request: { host: 'bar.com:8090', path: '/' }, response: { statusCode: 404 } },
        ],
      },
    ],
  },
  notMatchingPort(
    'HTTPRouteInvalidParentRefNotMatchingListenerPort',
    'httproute-listener-not-matching-route-port',
    'same-namespace',
    true,
  ),
  notMatchingPort(
    'HTTPRouteInvalidParentRefSectionNameNotMatchingPort',
    'httproute-listener-section-name-not-matching-port',
    'gateway-with-one-not-matching-port-and-section-name-route',
    false,
  ),
  {
    name: 'HTTPRouteRequestPercentageMirror',
    steps: [
      { kind: 'accepted', gateway: SAME_NS, routes: [infra('request-percentage-mirror')] },
      resolved(infra('request-percentage-mirror'), SAME_NS),
      {
        kind: 'mirrorShares',
        gateway: SAME_NS,
        cases: [
          percentMirror('/percent-mirror', 20),
          percentMirror('/percent-mirror-fraction', 50),
          {
            ...percentMirror('/percent-mirror-and-modify-headers', 35),
            request: {
              path: '/percent-mirror-and-modify-headers',
              headers: { 'X-Header-Remove': 'remove-val', 'X-Header-Add-Append': 'append-val-1' },
            },
            expectedRequest: {
              path: '/percent-mirror-and-modify-headers',
              headers: {
                'X-Header-Add': 'header-val-1',
                'X-Header-Add-Append': 'append-val-1,header-val-2',
                'X-Header-Set': 'set-overwrites-values',
              },
              absentHeaders: ['X-Header-Remove'],
            },
          },
        ],
      },
    ],
  },
];
