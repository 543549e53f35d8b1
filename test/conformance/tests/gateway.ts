/**
 * Gateway and GatewayClass tests of gateway-api v1.6.1 conformance/tests (Apache-2.0), and the status-driven
 * HTTPRoute ones (weight, observedGeneration), transcribed as data (gateway-*.go, gatewayclass-*.go,
 * httproute-weight.go, httproute-observed-generation-bump.go).
 */
import { UNUSABLE_ADDRESS, USABLE_ADDRESS } from '../harness.js';
import type { ConformanceCase, Cond, ListenerStatus, NN, Step } from '../steps.js';
import { INFRA, SAME_NS, V1, V2, V3 } from './httproute-routing.js';

const infra = (name: string): NN => ({ namespace: INFRA, name });
const HTTPROUTE = [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }];
const listener = (
  name: string,
  attachedRoutes: number,
  conditions: Cond[],
  supportedKinds: ListenerStatus['supportedKinds'] = HTTPROUTE,
): ListenerStatus => ({ name, supportedKinds, attachedRoutes, conditions });
const acceptedResolved: Cond[] = [
  { type: 'Accepted', status: 'True' },
  { type: 'ResolvedRefs', status: 'True' },
];
const listeners = (gateway: NN, list: ListenerStatus[]): Step => ({
  kind: 'gatewayListeners',
  gateway,
  listeners: list,
});
const gatewayCondition = (gateway: NN, condition: Cond): Step => ({ kind: 'gatewayCondition', gateway, condition });
const latest = (gateway: NN): Step => ({ kind: 'latest', objectKind: 'Gateway', object: gateway });
const invalidCertificate = [{ type: 'ResolvedRefs', status: 'False' as const, reason: 'InvalidCertificateRef' }];
const refNotPermitted = [{ type: 'ResolvedRefs', status: 'False' as const, reason: 'RefNotPermitted' }];
const programmedResolved: Cond[] = [
  { type: 'Programmed', status: 'True', reason: 'Programmed' },
  { type: 'ResolvedRefs', status: 'True' },
];
const listenersOf = (current: { spec?: Record<string, unknown> }) =>
  (current.spec?.listeners ?? []) as { name: string }[];

const STATIC = infra('gateway-static-addresses');
const withoutAddress =
  (value: string) =>
  (current: { spec?: Record<string, unknown> }): object => ({
    spec: { addresses: ((current.spec?.addresses ?? []) as { value?: string }[]).filter((a) => a.value !== value) },
  });

export const gatewayCases: ConformanceCase[] = [
  {
    // gateway-optional-address-value.go: an IPAddress entry without value gets an address of the pool
    name: 'GatewayOptionalAddressValue',
    steps: [
      { kind: 'namespaceReady', namespace: INFRA },
      latest(infra('gateway-without-address-value')),
      { kind: 'accepted', gateway: infra('gateway-without-address-value'), listeners: ['http'], routes: [] },
    ],
  },
  {
    // gateway-static-addresses.go: the harness overlays USABLE_ADDRESS (in --gateway-addresses) and
    // UNUSABLE_ADDRESS (outside it) as the suite's UsableNetworkAddresses and UnusableNetworkAddresses
    name: 'GatewayStaticAddresses',
    steps: [
      latest(STATIC),
      gatewayCondition(STATIC, { type: 'Accepted', status: 'False', reason: 'UnsupportedAddress' }),
      { kind: 'mutate', objectKind: 'Gateway', object: STATIC, patch: withoutAddress('fake address teehee!') },
      latest(STATIC),
      gatewayCondition(STATIC, { type: 'Accepted', status: 'True', reason: 'Accepted' }),
      gatewayCondition(STATIC, { type: 'Programmed', status: 'False', reason: 'AddressNotUsable' }),
      { kind: 'mutate', objectKind: 'Gateway', object: STATIC, patch: withoutAddress(UNUSABLE_ADDRESS) },
      latest(STATIC),
      gatewayCondition(STATIC, { type: 'Accepted', status: 'True', reason: 'Accepted' }),
      gatewayCondition(STATIC, { type: 'Programmed', status: 'True', reason: 'Programmed' }),
      listeners(STATIC, [listener('http', 0, acceptedResolved)]),
      { kind: 'gatewayAddresses', gateway: STATIC, addresses: [{ type: 'IPAddress', value: USABLE_ADDRESS }] },
    ],
  },
  {
    name: 'GatewayWithAttachedRoutes',
    steps: [
      listeners(infra('gateway-with-one-attached-route'), [listener('http', 1, acceptedResolved)]),
      listeners(infra('gateway-with-two-attached-routes'), [listener('http', 2, acceptedResolved)]),
      {
        kind: 'routeCondition',
        route: infra('http-route-not-accepted'),
        gateway: infra('gateway-with-two-attached-routes'),
        condition: { type: 'Accepted', status: 'False', reason: 'NoMatchingListenerHostname' },
      },
      listeners(infra('unresolved-gateway-with-one-attached-unresolved-route'), [
        listener('tls', 1, [
          { type: 'Programmed', status: 'False' },
          { type: 'ResolvedRefs', status: 'False' },
        ]),
      ]),
      {
        kind: 'routeCondition',
        route: infra('http-route-4'),
        gateway: infra('unresolved-gateway-with-one-attached-unresolved-route'),
        condition: { type: 'ResolvedRefs', status: 'False' },
      },
    ],
  },
  {
    name: 'GatewayInvalidRouteKind',
    steps: [
      listeners(infra('gateway-only-invalid-route-kind'), [
        listener('http', 0, [{ type: 'ResolvedRefs', status: 'False', reason: 'InvalidRouteKinds' }], []),
      ]),
      listeners(infra('gateway-supported-and-invalid-route-kind'), [
        listener('http', 0, [{ type: 'ResolvedRefs', status: 'False', reason: 'InvalidRouteKinds' }]),
      ]),
    ],
  },
  {
    name: 'GatewayInvalidParametersRef',
    steps: [
      latest(infra('gateway-invalid-parameters-ref')),
      gatewayCondition(infra('gateway-invalid-parameters-ref'), {
        type: 'Accepted',
        status: 'False',
        reason: 'InvalidParameters',
      }),
    ],
  },
  {
    name: 'GatewayInvalidTLSConfiguration',
    steps: [
      'gateway-certificate-nonexistent-secret',
      'gateway-certificate-unsupported-group',
      'gateway-certificate-unsupported-kind',
      'gateway-certificate-malformed-secret',
    ].map((name) => listeners(infra(name), [listener('https', 0, invalidCertificate)])),
  },
  {
    name: 'GatewayListenerUnsupportedProtocol',
    steps: [
      latest(infra('gateway-only-unsupported-protocols')),
      gatewayCondition(infra('gateway-only-unsupported-protocols'), {
        type: 'Accepted',
        status: 'False',
        reason: 'ListenersNotValid',
      }),
      listeners(infra('gateway-only-unsupported-protocols'), [
        listener('invalid', 0, [{ type: 'Accepted', status: 'False', reason: 'UnsupportedProtocol' }], []),
      ]),
      latest(infra('gateway-supported-and-unsupported-protocols')),
      gatewayCondition(infra('gateway-supported-and-unsupported-protocols'), {
        type: 'Accepted',
        status: 'True',
        reason: 'ListenersNotValid',
      }),
      listeners(infra('gateway-supported-and-unsupported-protocols'), [
        listener('http', 0, [{ type: 'Accepted', status: 'True', reason: 'Accepted' }]),
        listener('invalid', 0, [{ type: 'Accepted', status: 'False', reason: 'UnsupportedProtocol' }], []),
      ]),
    ],
  },
  {
    name: 'GatewaySecretInvalidReferenceGrant',
    steps: [listeners(infra('gateway-secret-invalid-reference-grant'), [listener('https', 0, refNotPermitted)])],
  },
  {
    name: 'GatewaySecretMissingReferenceGrant',
    steps: [listeners(infra('gateway-secret-missing-reference-grant'), [listener('https', 0, refNotPermitted)])],
  },
  {
    name: 'GatewaySecretReferenceGrantAllInNamespace',
    steps: [
      listeners(infra('gateway-secret-reference-grant-all-in-namespace'), [listener('https', 0, programmedResolved)]),
    ],
  },
  {
    name: 'GatewaySecretReferenceGrantSpecific',
    steps: [listeners(infra('gateway-secret-reference-grant-specific'), [listener('https', 0, programmedResolved)])],
  },
  {
    name: 'GatewayClassObservedGenerationBump',
    steps: [
      { kind: 'gatewayClassAccepted', name: 'gatewayclass-observed-generation-bump' },
      {
        kind: 'latest',
        objectKind: 'GatewayClass',
        object: { namespace: '', name: 'gatewayclass-observed-generation-bump' },
      },
      {
        kind: 'mutate',
        objectKind: 'GatewayClass',
        object: { namespace: '', name: 'gatewayclass-observed-generation-bump' },
        patch: () => ({ spec: { description: 'new' } }),
      },
      { kind: 'gatewayClassAccepted', name: 'gatewayclass-observed-generation-bump' },
      {
        kind: 'latest',
        objectKind: 'GatewayClass',
        object: { namespace: '', name: 'gatewayclass-observed-generation-bump' },
      },
    ],
  },
  {
    name: 'GatewayObservedGenerationBump',
    steps: [
      { kind: 'namespaceReady', namespace: INFRA },
      latest(infra('gateway-observed-generation-bump')),
      {
        kind: 'mutate',
        objectKind: 'Gateway',
        object: infra('gateway-observed-generation-bump'),
        patch: (current) => ({
          spec: {
            listeners: [
              ...listenersOf(current),
              {
                name: 'alternate',
                hostname: 'foo.com',
                port: 80,
                protocol: 'HTTP',
                allowedRoutes: { namespaces: { from: 'All' } },
              },
            ],
          },
        }),
      },
      { kind: 'namespaceReady', namespace: INFRA },
      latest(infra('gateway-observed-generation-bump')),
    ],
  },
  {
    name: 'GatewayModifyListeners',
    steps: [
      { kind: 'namespaceReady', namespace: INFRA },
      latest(infra('gateway-add-listener')),
      {
        kind: 'mutate',
        objectKind: 'Gateway',
        object: infra('gateway-add-listener'),
        patch: (current) => ({
          spec: {
            listeners: [
              ...listenersOf(current),
              {
                name: 'http',
                port: 80,
                protocol: 'HTTP',
                hostname: 'data.test.com',
                allowedRoutes: { namespaces: { from: 'All' } },
              },
            ],
          },
        }),
      },
      { kind: 'namespaceReady', namespace: INFRA },
      listeners(infra('gateway-add-listener'), [
        listener('https', 1, acceptedResolved),
        listener('http', 1, acceptedResolved),
      ]),
      latest(infra('gateway-add-listener')),
      { kind: 'namespaceReady', namespace: INFRA },
      latest(infra('gateway-remove-listener')),
      {
        kind: 'mutate',
        objectKind: 'Gateway',
        object: infra('gateway-remove-listener'),
        patch: (current) => ({ spec: { listeners: listenersOf(current).filter((l) => l.name === 'http') } }),
      },
      { kind: 'namespaceReady', namespace: INFRA },
      listeners(infra('gateway-remove-listener'), [listener('http', 1, acceptedResolved)]),
      latest(infra('gateway-remove-listener')),
    ],
  },
  {
    name: 'HTTPRouteWeight',
    steps: [
      { kind: 'accepted', gateway: SAME_NS, routes: [infra('weighted-backends')] },
      {
        kind: 'routeCondition',
        route: infra('weighted-backends'),
        gateway: SAME_NS,
        condition: { type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs' },
      },
      {
        kind: 'weights',
        gateway: SAME_NS,
        expected: { request: { path: '/' }, response: { statusCodes: [200] }, namespace: INFRA },
        weights: { [V1]: 0.7, [V2]: 0.3, [V3]: 0.0 },
      },
    ],
  },
  {
    name: 'HTTPRouteObservedGenerationBump',
    steps: [
      { kind: 'namespaceReady', namespace: INFRA },
      { kind: 'latest', objectKind: 'HTTPRoute', object: infra('observed-generation-bump') },
      {
        kind: 'mutate',
        objectKind: 'HTTPRoute',
        object: infra('observed-generation-bump'),
        patch: (current) => {
          const rules = (current.spec?.rules ?? []) as { backendRefs?: { name: string }[] }[];
          return {
            spec: {
              rules: rules.map((r, i) =>
                i === 0 && r.backendRefs
                  ? { ...r, backendRefs: r.backendRefs.map((b, j) => (j === 0 ? { ...b, name: V2 } : b)) }
                  : r,
              ),
            },
          };
        },
      },
      {
        kind: 'routeCondition',
        route: infra('observed-generation-bump'),
        gateway: SAME_NS,
        condition: { type: 'Accepted', status: 'True' },
      },
      {
        kind: 'routeCondition',
        route: infra('observed-generation-bump'),
        gateway: SAME_NS,
        condition: { type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs' },
      },
      { kind: 'latest', objectKind: 'HTTPRoute', object: infra('observed-generation-bump') },
    ],
  },
];
