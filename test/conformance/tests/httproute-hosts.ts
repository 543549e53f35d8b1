/**
 * HTTPRoute hostname, ReferenceGrant and header-modifier tests of gateway-api v1.6.1 conformance/tests (Apache-2.0),
 * transcribed as data (httproute-hostname-intersection.go, -listener-hostname-matching.go, -reference-grant.go,
 * -request-header-modifier.go).
 */
import type { ExpectedResponse } from '../http.js';
import type { ConformanceCase, ListenerStatus, NN } from '../steps.js';
import { INFRA, routed, SAME_NS, status, to, V1, V2, V3, WEB } from './httproute-routing.js';

const infra = (name: string): NN => ({ namespace: INFRA, name });
const resolved = (route: NN, gateway: NN) => ({
  kind: 'routeCondition' as const,
  route,
  gateway,
  condition: { type: 'ResolvedRefs', status: 'True' as const, reason: 'ResolvedRefs' },
});
const at = (host: string, path: string, backend: string) => to(path, backend, { host });
const none = (host: string, path: string) => status(path, 404, { host });

const intersection = infra('httproute-hostname-intersection');
const intersectionRoutes = [
  'specific-host-matches-listener-specific-host',
  'specific-host-matches-listener-wildcard-host',
  'wildcard-host-matches-listener-specific-host',
  'wildcard-host-matches-listener-wildcard-host',
].map(infra);
const listener = (name: string, attachedRoutes: number): ListenerStatus => ({
  name,
  supportedKinds: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }],
  attachedRoutes,
  conditions: [
    { type: 'Accepted', status: 'True' },
    { type: 'ResolvedRefs', status: 'True' },
  ],
});
const all = infra('httproute-hostname-intersection-all');

const headerCase = (
  path: string,
  sent: Record<string, string>,
  seen: Record<string, string> | undefined,
  absent?: string[],
): ExpectedResponse => ({
  request: { path, headers: sent },
  expectedRequest: { path, ...(seen ? { headers: seen } : {}), ...(absent ? { absentHeaders: absent } : {}) },
  backend: V1,
  namespace: INFRA,
});

/** gateway-http-listener-isolation.go: each listener's path answers only for the hosts that listener takes */
const ISOLATION_PATHS = [
  '/empty-hostname',
  '/wildcard-example-com',
  '/wildcard-foo-example-com',
  '/abc-foo-example-com',
];
const isolationCases: ExpectedResponse[] = [
  'bar.com',
  'bar.example.com',
  'bar.foo.example.com',
  'abc.foo.example.com',
].flatMap((host, i) => ISOLATION_PATHS.map((path, j) => (i === j ? at(host, path, V1) : none(host, path))));
const isolation = (gateway: string, suffix: string): ConformanceCase['steps'] => {
  const routes = ['empty-hostname', 'wildcard-example-com', 'wildcard-foo-example-com', 'abc-foo-example-com'].map(
    (n) => infra(`attaches-to-${n}${suffix}`),
  );
  return [
    { kind: 'accepted', gateway: infra(gateway), routes },
    ...routes.map((r) => resolved(r, infra(gateway))),
    { kind: 'requests', gateway: infra(gateway), cases: isolationCases },
  ];
};

export const hostCases: ConformanceCase[] = [
  {
    name: 'GatewayHTTPListenerIsolation',
    steps: [
      { kind: 'namespaceReady', namespace: INFRA },
      ...isolation('http-listener-isolation', ''),
      ...isolation('http-listener-isolation-with-hostname-intersection', '-with-hostname-intersection'),
    ],
  },
  {
    name: 'HTTPRouteHostnameIntersection',
    steps: [
      // Go's NamespacesMustBeReady before the subtests
      { kind: 'namespaceReady', namespace: INFRA },
      { kind: 'accepted', gateway: intersection, routes: intersectionRoutes },
      ...intersectionRoutes.map((r) => resolved(r, intersection)),
      {
        kind: 'requests',
        gateway: intersection,
        cases: [
          at('very.specific.com', '/s1', V1),
          at('very.specific.com:1234', '/s1', V1),
          none('non.matching.com', '/s1'),
          none('foo.nonmatchingwildcard.io', '/s1'),
          none('foo.wildcard.io', '/s1'),
          none('very.specific.com', '/non-matching-prefix'),
          at('foo.wildcard.io', '/s2', V2),
          at('bar.wildcard.io', '/s2', V2),
          at('foo.bar.wildcard.io', '/s2', V2),
          none('non.matching.com', '/s2'),
          none('wildcard.io', '/s2'),
          none('very.specific.com', '/s2'),
          none('foo.wildcard.io', '/non-matching-prefix'),
          at('very.specific.com', '/s3', V3),
          none('non.matching.com', '/s3'),
          none('foo.specific.com', '/s3'),
          none('foo.wildcard.io', '/s3'),
          none('very.specific.com', '/non-matching-prefix'),
          at('foo.anotherwildcard.io', '/s4', V1),
          at('bar.anotherwildcard.io', '/s4', V1),
          at('foo.bar.anotherwildcard.io', '/s4', V1),
          none('anotherwildcard.io', '/s4'),
          none('foo.wildcard.io', '/s4'),
          none('very.specific.com', '/s4'),
          none('foo.anotherwildcard.io', '/non-matching-prefix'),
        ],
      },
      { kind: 'accepted', gateway: intersection, routes: [] },
      {
        kind: 'routeParents',
        route: infra('no-intersecting-hosts'),
        parents: [
          {
            parentRef: {
              group: 'gateway.networking.k8s.io',
              kind: 'Gateway',
              namespace: INFRA,
              name: intersection.name,
            },
            conditions: [{ type: 'Accepted', status: 'False', reason: 'NoMatchingListenerHostname' }],
          },
        ],
        namespaceRequired: true,
      },
      {
        kind: 'requests',
        gateway: intersection,
        cases: [none('specific.but.wrong.com', '/s5'), none('wildcard.io', '/s5')],
      },
      {
        kind: 'gatewayListeners',
        gateway: intersection,
        listeners: [listener('listener-1', 2), listener('listener-2', 1), listener('listener-3', 1)],
      },
      { kind: 'accepted', gateway: all, routes: [all] },
      resolved(all, all),
      {
        kind: 'requests',
        gateway: all,
        cases: [
          at('first.com', '/', V2),
          at('sub.first.com', '/', V2),
          at('second.com', '/', V2),
          at('sub.second.com', '/', V2),
          { ...none('third.com', '/'), namespace: INFRA },
          { ...none('sub.third.com', '/'), namespace: INFRA },
        ],
      },
    ],
  },
  {
    name: 'HTTPRouteListenerHostnameMatching',
    steps: (() => {
      const gw = infra('httproute-listener-hostname-matching');
      return [
        // Go's NamespacesMustBeReady first
        { kind: 'namespaceReady' as const, namespace: INFRA },
        { kind: 'accepted' as const, gateway: gw, listeners: ['listener-1'], routes: [infra('backend-v1')] },
        resolved(infra('backend-v1'), gw),
        { kind: 'accepted' as const, gateway: gw, listeners: ['listener-2'], routes: [infra('backend-v2')] },
        resolved(infra('backend-v2'), gw),
        {
          kind: 'accepted' as const,
          gateway: gw,
          listeners: ['listener-3', 'listener-4'],
          routes: [infra('backend-v3')],
        },
        resolved(infra('backend-v3'), gw),
        {
          kind: 'requests' as const,
          gateway: gw,
          listener: 'listener-3',
          cases: [
            at('bar.com', '/', V1),
            at('foo.bar.com', '/', V2),
            at('baz.bar.com', '/', V3),
            at('boo.bar.com', '/', V3),
            at('multiple.prefixes.bar.com', '/', V3),
            at('multiple.prefixes.foo.com', '/', V3),
            none('foo.com', '/'),
            none('no.matching.host', '/'),
          ],
        },
      ];
    })(),
  },
  {
    name: 'HTTPRouteReferenceGrant',
    steps: [
      { kind: 'accepted', gateway: SAME_NS, routes: [infra('reference-grant')] },
      resolved(infra('reference-grant'), SAME_NS),
      {
        kind: 'requests',
        gateway: SAME_NS,
        cases: [{ request: { method: 'GET', path: '/' }, backend: 'web-backend', namespace: WEB }],
      },
      {
        kind: 'delete',
        resource: 'referencegrants.gateway.networking.k8s.io',
        namespace: WEB,
        name: 'reference-grant',
      },
      {
        kind: 'requests',
        gateway: SAME_NS,
        cases: [{ request: { method: 'GET', path: '/' }, response: { statusCode: 500 } }],
      },
    ],
  },
  routed(
    'HTTPRouteRequestHeaderModifier',
    SAME_NS,
    [infra('request-header-modifier')],
    [
      headerCase(
        '/set',
        { 'Some-Other-Header': 'val' },
        { 'Some-Other-Header': 'val', 'X-Header-Set': 'set-overwrites-values' },
      ),
      headerCase(
        '/set',
        { 'Some-Other-Header': 'val', 'X-Header-Set': 'some-other-value' },
        { 'Some-Other-Header': 'val', 'X-Header-Set': 'set-overwrites-values' },
      ),
      headerCase(
        '/add',
        { 'Some-Other-Header': 'val' },
        { 'Some-Other-Header': 'val', 'X-Header-Add': 'add-appends-values' },
      ),
      headerCase(
        '/add',
        { 'Some-Other-Header': 'val', 'X-Header-Add': 'some-other-value' },
        { 'Some-Other-Header': 'val', 'X-Header-Add': 'some-other-value,add-appends-values' },
      ),
      headerCase('/remove', { 'X-Header-Remove': 'val' }, undefined, ['X-Header-Remove']),
      headerCase(
        '/multiple',
        {
          'X-Header-Set-2': 'set-val-2',
          'X-Header-Add-2': 'add-val-2',
          'X-Header-Remove-2': 'remove-val-2',
          'Another-Header': 'another-header-val',
        },
        {
          'X-Header-Set-1': 'header-set-1',
          'X-Header-Set-2': 'header-set-2',
          'X-Header-Add-1': 'header-add-1',
          'X-Header-Add-2': 'add-val-2,header-add-2',
          'X-Header-Add-3': 'header-add-3',
          'Another-Header': 'another-header-val',
        },
        ['X-Header-Remove-1', 'X-Header-Remove-2'],
      ),
      headerCase(
        '/case-insensitivity',
        {
          'x-header-set': 'original-val-set',
          'x-header-add': 'original-val-add',
          'x-header-remove': 'original-val-remove',
          'Another-Header': 'another-header-val',
        },
        {
          'X-Header-Set': 'header-set',
          'X-Header-Add': 'original-val-add,header-add',
          'Another-Header': 'another-header-val',
        },
        ['x-header-remove', 'X-Header-Remove'],
      ),
    ],
  ),
];
