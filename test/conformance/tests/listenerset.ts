/**
 * ListenerSet tests of gateway-api v1.6.1 conformance/tests (Apache-2.0), transcribed as data (listenerset-*.go):
 * the same waits in the same order, the same ExpectedResponse tables (a `t.Run` block's cases as one parallel
 * `requests` step), RoutesAndParentMustBeAccepted with a ListenerSet as the route parents of kind ListenerSet and
 * every listener of the set ready.
 */
import type { ExpectedResponse } from '../http.js';
import type { ConformanceCase, Cond, ListenerStatus, NN, Step } from '../steps.js';
import { INFRA, status, to, V1, V2, V3 } from './httproute-routing.js';

const infra = (name: string): NN => ({ namespace: INFRA, name });
const GROUP = 'gateway.networking.k8s.io';

/** generateSupportedRouteKinds */
const HTTPROUTE = [{ group: GROUP, kind: 'HTTPRoute' }];
/** generateAcceptedListenerConditions */
const ACCEPTED: Cond[] = [
  { type: 'ResolvedRefs', status: 'True' },
  { type: 'Accepted', status: 'True' },
  { type: 'Programmed', status: 'True' },
];
const entry = (name: string, attachedRoutes: number): ListenerStatus => ({
  name,
  supportedKinds: HTTPROUTE,
  attachedRoutes,
  conditions: ACCEPTED,
});

const ready: Step = { kind: 'namespaceReady', namespace: INFRA };
const gatewayAccepted = (gateway: NN): Step => ({
  kind: 'gatewayCondition',
  gateway,
  condition: { type: 'Accepted', status: 'True' },
});
const attached = (gateway: NN, count: number): Step => ({ kind: 'attachedListenerSets', gateway, count });
const setCondition = (listenerSet: NN, type: string, st: 'True' | 'False', reason?: string): Step => ({
  kind: 'listenerSetCondition',
  listenerSet,
  condition: { type, status: st, ...(reason ? { reason } : {}) },
});
const setListeners = (listenerSet: NN, listeners: ListenerStatus[]): Step => ({
  kind: 'listenerSetListeners',
  listenerSet,
  listeners,
});
const listenerConditions = (listenerSet: NN, conditions: Cond[], ...listeners: string[]): Step => ({
  kind: 'listenerSetListenerConditions',
  listenerSet,
  conditions,
  ...(listeners.length > 0 ? { listeners } : {}),
});
/** the rejected set of the allowed-namespace tests: Accepted and Programmed False, NotAllowed */
const notAllowed = (listenerSet: NN): Step[] => [
  setCondition(listenerSet, 'Accepted', 'False', 'NotAllowed'),
  setCondition(listenerSet, 'Programmed', 'False', 'NotAllowed'),
];
/** the admitted set of the allowed-namespace tests */
const admitted = (listenerSet: NN, listener: string): Step[] => [
  setCondition(listenerSet, 'Accepted', 'True', 'Accepted'),
  setCondition(listenerSet, 'Programmed', 'True', 'Programmed'),
  listenerConditions(listenerSet, ACCEPTED, listener),
];

/**
 * RoutesAndParentMustBeAccepted with a ListenerSet (NewResourceRef without listener names): each route has a parent
 * of kind ListenerSet, Accepted (namespace required when the route is in another namespace), then every listener of
 * the set has ResolvedRefs, Accepted and Programmed True.
 */
const routesAndSetAccepted = (listenerSet: NN, routes: NN[]): Step[] => [
  ...routes.map(
    (route): Step => ({
      kind: 'routeParents',
      route,
      parents: [
        {
          parentRef: { group: GROUP, kind: 'ListenerSet', name: listenerSet.name, namespace: listenerSet.namespace },
          conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted' }],
        },
      ],
      namespaceRequired: route.namespace !== listenerSet.namespace,
    }),
  ),
  listenerConditions(listenerSet, ACCEPTED),
];
const routeCondition = (route: NN, parent: NN, condition: Cond): Step => ({
  kind: 'routeCondition',
  route,
  gateway: parent,
  condition,
});
const requests = (gateway: NN, cases: ExpectedResponse[]): Step => ({ kind: 'requests', gateway, cases });
/** WaitForGatewayAddress: the requests step's wait for the address, with no request */
const address = (gateway: NN, listener: string): Step => ({ kind: 'requests', gateway, listener, cases: [] });

/** the conflicted listener of the conflict tests: not Accepted, not Programmed, Conflicted, all for `reason` */
const conflicted = (reason: string): Cond[] => [
  { type: 'Accepted', status: 'False', reason },
  { type: 'Programmed', status: 'False', reason },
  { type: 'Conflicted', status: 'True', reason },
];

/** listenerset-hostname-conflict.go and listenerset-protocol-conflict.go: one shape, another reason and names */
const conflictCase = (name: string, what: 'hostname' | 'protocol', reason: string): ConformanceCase => {
  const gw = infra(`gateway-with-listenerset-${what}-conflict`);
  const withGateway = (n: number) => infra(`listenerset-with-${what}-conflict-with-gateway-${n}`);
  const withSet = (n: number) => infra(`listenerset-with-${what}-conflict-with-listener-set-${n}`);
  const withGatewayListener = `${what}-conflict-with-gateway-listener`;
  const withSetListener = `${what}-conflict-with-listener-set-listener`;
  const acceptedSet = (set: NN, own: string): Step[] => [
    setCondition(set, 'Accepted', 'True'),
    setCondition(set, 'Programmed', 'True', 'Programmed'),
    listenerConditions(set, ACCEPTED, own),
  ];
  const invalidSet = (set: NN): Step[] => [
    setCondition(set, 'Accepted', 'False', 'ListenersNotValid'),
    setCondition(set, 'Programmed', 'False', 'ListenersNotValid'),
  ];
  return {
    name,
    steps: [
      ready,
      gatewayAccepted(gw),
      { kind: 'listenerConditions', gateway: gw, listener: 'gateway-listener', conditions: ACCEPTED },
      // the first of the conflicting listeners is accepted by the listener precedence
      { kind: 'listenerConditions', gateway: gw, listener: withGatewayListener, conditions: ACCEPTED },
      attached(gw, 2),
      ...acceptedSet(withGateway(1), 'listener-set-1-listener'),
      listenerConditions(withGateway(1), conflicted(reason), withGatewayListener),
      listenerConditions(withGateway(1), ACCEPTED, withSetListener),
      ...invalidSet(withGateway(2)),
      listenerConditions(withGateway(2), conflicted(reason), withGatewayListener),
      ...acceptedSet(withSet(1), 'listener-set-2-listener'),
      listenerConditions(withSet(1), conflicted(reason), withSetListener),
      ...invalidSet(withSet(2)),
      listenerConditions(withSet(2), conflicted(reason), withSetListener),
    ],
  };
};

const HTTP_ROUTING_GW = infra('gateway-with-listener-sets-http-routing');
const ROUTING_HOSTS = [
  'gateway-listener-1.com',
  'gateway-listener-2.com',
  'listener-set-http-routing-1-listener-1.com',
  'listener-set-http-routing-1-listener-2.com',
  'listener-set-http-routing-2-listener-1.com',
  'listener-set-http-routing-2-listener-2.com',
];
/** each path of listenerset-http-routing.go's table, on every host: served by `backend` where `on` says, else 404 */
const everyHost = (path: string, backend: string, on: (host: string) => boolean) =>
  ROUTING_HOSTS.map((host) => (on(host) ? to(path, backend, { host }) : status(path, 404, { host })));

const ALLOWED_ROUTES_GW = infra('gateway-with-listener-sets-test-allowed-routes');
const ROUTES_ALLOWED_NS = 'gateway-api-routes-allowed-ns';
const ROUTES_NOT_ALLOWED_NS = 'gateway-api-routes-not-allowed-ns';
const LS_CROSS_NS = 'gateway-api-ls-cross-ns';

const DUAL_GW = infra('gateway-dual-parentref');
const DUAL_LS = infra('ls-dual-parentref');
const SECTION_GW = infra('gateway-section-name');
const PARENTREF_GW = infra('gateway-parentref');
const PARENTREF_LS = infra('listenerset-parentref');
const WITHOUT_GRANT: NN = {
  namespace: 'gateway-api-listener-sets-test-reference-grant-ns',
  name: 'listenerset-without-reference-grant',
};

export const listenerSetCases: ConformanceCase[] = [
  {
    name: 'ListenerSetAllowedNamespaceNone',
    steps: [
      ready,
      gatewayAccepted(infra('gateway-does-not-allow-listenerset')),
      attached(infra('gateway-does-not-allow-listenerset'), 0),
      ...notAllowed(infra('listenerset-not-allowed')),
    ],
  },
  {
    name: 'ListenerSetDefaultNotAllowed',
    steps: [
      ready,
      gatewayAccepted(infra('gateway-default-does-not-allow-listenerset')),
      attached(infra('gateway-default-does-not-allow-listenerset'), 0),
      ...notAllowed(infra('listenerset-default-not-allowed')),
    ],
  },
  {
    name: 'ListenerSetAllowedNamespaceSame',
    steps: [
      ready,
      gatewayAccepted(infra('gateway-allows-listenerset-in-same-namespace')),
      attached(infra('gateway-allows-listenerset-in-same-namespace'), 1),
      ...admitted(infra('listenerset-in-same-namespace'), 'listenerset-in-same-namespace-listener'),
      ...notAllowed({
        namespace: 'gateway-api-listenerset-not-allowed-ns',
        name: 'listenerset-in-different-namespace',
      }),
    ],
  },
  {
    name: 'ListenerSetAllowedNamespaceSelector',
    steps: [
      ready,
      gatewayAccepted(infra('gateway-allows-listenerset-in-selected-namespace')),
      attached(infra('gateway-allows-listenerset-in-selected-namespace'), 1),
      ...admitted(
        { namespace: 'gateway-api-listenerset-selector-allowed-ns', name: 'listenerset-in-selected-namespace' },
        'listenerset-in-selected-namespace-listener',
      ),
      ...notAllowed({
        namespace: 'gateway-api-listenerset-selector-not-allowed-ns',
        name: 'listenerset-not-in-selected-namespace',
      }),
    ],
  },
  {
    name: 'ListenerSetAllowedRoutesNamespaces',
    steps: [
      ready,
      address(ALLOWED_ROUTES_GW, 'gateway-listener'),
      gatewayAccepted(ALLOWED_ROUTES_GW),
      attached(ALLOWED_ROUTES_GW, 2),
      // Same-namespace ListenerSet
      ...routesAndSetAccepted(infra('listenerset-test-allowed-routes-namespaces'), [
        infra('route-in-same-namespace'),
        { namespace: ROUTES_ALLOWED_NS, name: 'route-in-selected-namespace' },
        { namespace: ROUTES_NOT_ALLOWED_NS, name: 'route-not-in-selected-namespace' },
      ]),
      setListeners(infra('listenerset-test-allowed-routes-namespaces'), [
        entry('listener-set-listener-allowed-routes-all', 3),
        entry('listener-set-listener-allowed-routes-same', 1),
        entry('listener-set-listener-allowed-routes-selector', 1),
      ]),
      requests(ALLOWED_ROUTES_GW, [
        to('/route-in-same-namespace', V1, { host: 'listener-set-listener-allowed-routes-all.com' }),
        to('/route-in-selected-namespace', V2, { host: 'listener-set-listener-allowed-routes-all.com' }),
        to('/route-not-in-selected-namespace', V3, { host: 'listener-set-listener-allowed-routes-all.com' }),
        to('/route-in-same-namespace', V1, { host: 'listener-set-listener-allowed-routes-same.com' }),
        status('/route-in-selected-namespace', 404, { host: 'listener-set-listener-allowed-routes-same.com' }),
        status('/route-not-in-selected-namespace', 404, { host: 'listener-set-listener-allowed-routes-same.com' }),
        status('/route-in-same-namespace', 404, { host: 'listener-set-listener-allowed-routes-selector.com' }),
        to('/route-in-selected-namespace', V2, { host: 'listener-set-listener-allowed-routes-selector.com' }),
        status('/route-not-in-selected-namespace', 404, { host: 'listener-set-listener-allowed-routes-selector.com' }),
      ]),
      // Cross-namespace ListenerSet
      ...routesAndSetAccepted({ namespace: LS_CROSS_NS, name: 'listenerset-test-allowed-routes-cross-ns' }, [
        { namespace: LS_CROSS_NS, name: 'route-in-listenerset-namespace' },
      ]),
      routeCondition(
        infra('route-in-gateway-namespace'),
        { namespace: LS_CROSS_NS, name: 'listenerset-test-allowed-routes-cross-ns' },
        { type: 'Accepted', status: 'False', reason: 'NotAllowedByListeners' },
      ),
      setListeners({ namespace: LS_CROSS_NS, name: 'listenerset-test-allowed-routes-cross-ns' }, [
        entry('listener-set-listener-allowed-routes-cross-ns-same', 1),
      ]),
      requests(ALLOWED_ROUTES_GW, [
        to('/route-in-listenerset-namespace', V1, { host: 'listener-set-listener-allowed-routes-cross-ns-same.com' }),
        status('/route-in-gateway-namespace', 404, { host: 'listener-set-listener-allowed-routes-cross-ns-same.com' }),
      ]),
    ],
  },
  {
    name: 'ListenerSetAllowedRoutesSupportedKinds',
    steps: [
      ready,
      gatewayAccepted(infra('gateway-with-listener-sets-test-supported-route-kinds')),
      listenerConditions(
        infra('listenerset-test-allowed-routes-supported-kinds'),
        [{ type: 'ResolvedRefs', status: 'False', reason: 'InvalidRouteKinds' }],
        'listener-set-listener-allowed-routes-tls-only',
      ),
    ],
  },
  {
    name: 'ListenerSetDualParentRefIndependence',
    steps: [
      ready,
      address(DUAL_GW, 'gw-dual-parentref-listener'),
      gatewayAccepted(DUAL_GW),
      attached(DUAL_GW, 1),
      setListeners(DUAL_LS, [entry('ls-dual-parentref-listener', 2)]),
      // Both parentRefs are Accepted
      routeCondition(infra('route-dual-parentref-both'), DUAL_GW, { type: 'Accepted', status: 'True' }),
      routeCondition(infra('route-dual-parentref-both'), DUAL_LS, { type: 'Accepted', status: 'True' }),
      requests(DUAL_GW, [to('/dualboth', V1, { host: 'gw-dual.com' }), to('/dualboth', V1, { host: 'ls-dual.com' })]),
      // One of two parentRefs is Accepted
      routeCondition(infra('route-dual-parentref-one'), DUAL_GW, {
        type: 'Accepted',
        status: 'False',
        reason: 'NoMatchingParent',
      }),
      routeCondition(infra('route-dual-parentref-one'), DUAL_LS, { type: 'Accepted', status: 'True' }),
      ...routesAndSetAccepted(DUAL_LS, [infra('route-dual-parentref-one')]),
      requests(DUAL_GW, [
        to('/dualone', V2, { host: 'ls-dual.com' }),
        status('/dualone', 404, { host: 'gw-dual.com' }),
      ]),
    ],
  },
  {
    name: 'ListenerSetGatewayParentSectionNameNotFound',
    steps: [
      ready,
      address(SECTION_GW, 'gw-listener'),
      gatewayAccepted(SECTION_GW),
      attached(SECTION_GW, 1),
      ...routesAndSetAccepted(infra('listenerset-section-name'), [infra('route-via-listenerset')]),
      routeCondition(infra('route-via-gateway'), SECTION_GW, {
        type: 'Accepted',
        status: 'False',
        reason: 'NoMatchingParent',
      }),
      requests(SECTION_GW, [to('/goodsection', V1, { host: 'ls-section-name.com' })]),
      requests(SECTION_GW, [status('/badsection', 404, { host: 'gw-section.com' })]),
    ],
  },
  conflictCase('ListenerSetHostnameConflict', 'hostname', 'HostnameConflict'),
  conflictCase('ListenerSetProtocolConflict', 'protocol', 'ProtocolConflict'),
  {
    name: 'ListenerSetHTTPRouting',
    steps: [
      ready,
      {
        kind: 'accepted',
        gateway: HTTP_ROUTING_GW,
        listeners: ['gateway-listener'],
        routes: [infra('attaches-to-all-listeners'), infra('gateway-route'), infra('gateway-section-route')],
      },
      attached(HTTP_ROUTING_GW, 2),
      ...routesAndSetAccepted(infra('listener-set-http-routing-1'), [
        infra('attaches-to-all-listeners'),
        infra('listener-set-http-routing-1-route'),
        infra('listener-set-http-routing-1-section-route'),
      ]),
      setListeners(infra('listener-set-http-routing-1'), [
        entry('listener-set-http-routing-1-listener-1', 3),
        entry('listener-set-http-routing-1-listener-2', 2),
      ]),
      ...routesAndSetAccepted(infra('listener-set-http-routing-2'), [
        infra('attaches-to-all-listeners'),
        infra('listener-set-http-routing-2-route'),
      ]),
      setListeners(infra('listener-set-http-routing-2'), [
        entry('listener-set-http-routing-2-listener-1', 2),
        entry('listener-set-http-routing-2-listener-2', 2),
      ]),
      requests(HTTP_ROUTING_GW, [
        ...everyHost('/route', V1, () => true),
        ...everyHost('/gateway-route', V2, (h) => h.startsWith('gateway-')),
        ...everyHost('/gateway-section-route', V3, (h) => h === 'gateway-listener-1.com'),
        ...everyHost('/listener-set-http-routing-1-route', V2, (h) => h.startsWith('listener-set-http-routing-1-')),
        ...everyHost(
          '/listener-set-http-routing-1-section-route',
          V3,
          (h) => h === 'listener-set-http-routing-1-listener-1.com',
        ),
        ...everyHost('/listener-set-http-routing-2-route', V2, (h) => h.startsWith('listener-set-http-routing-2-')),
      ]),
    ],
  },
  {
    name: 'ListenerSetReferenceGrant',
    steps: [
      ready,
      gatewayAccepted(infra('gateway-with-listener-sets-test-reference-grant')),
      setCondition(infra('listenerset-with-reference-grant'), 'Accepted', 'True'),
      setCondition(infra('listenerset-with-reference-grant'), 'Programmed', 'True'),
      listenerConditions(
        infra('listenerset-with-reference-grant'),
        [{ type: 'ResolvedRefs', status: 'True' }],
        'listenerset-with-reference-grant-listener',
      ),
      setCondition(WITHOUT_GRANT, 'Accepted', 'False', 'ListenersNotValid'),
      setCondition(WITHOUT_GRANT, 'Programmed', 'False', 'ListenersNotValid'),
      listenerConditions(
        WITHOUT_GRANT,
        [{ type: 'ResolvedRefs', status: 'False', reason: 'RefNotPermitted' }],
        'listenerset-without-reference-grant-listener',
      ),
    ],
  },
  {
    name: 'ListenerSetRouteStatusScopedToParentRef',
    steps: [
      ready,
      gatewayAccepted(PARENTREF_GW),
      attached(PARENTREF_GW, 1),
      setListeners(PARENTREF_LS, [entry('listenerset-parentref-listener', 1)]),
      // Gateway-only parentRef
      routeCondition(infra('route-parentref-gwonly'), PARENTREF_GW, { type: 'Accepted', status: 'True' }),
      {
        kind: 'routeParents',
        route: infra('route-parentref-gwonly'),
        parents: [
          {
            parentRef: { group: GROUP, kind: 'Gateway', name: PARENTREF_GW.name, namespace: INFRA },
            conditions: [{ type: 'Accepted', status: 'True' }],
          },
        ],
        namespaceRequired: true,
      },
      // ListenerSet-only parentRef
      ...routesAndSetAccepted(PARENTREF_LS, [infra('route-parentref-lsonly')]),
      {
        kind: 'routeParents',
        route: infra('route-parentref-lsonly'),
        parents: [
          {
            parentRef: { group: GROUP, kind: 'ListenerSet', name: PARENTREF_LS.name, namespace: INFRA },
            conditions: [{ type: 'Accepted', status: 'True' }],
          },
        ],
        namespaceRequired: true,
      },
    ],
  },
];
