import { describe, expect, it } from 'vitest';
import { buildGatewayRoutes, type GatewayInput, intersectHostnames } from '../../src/model/gateway/index.js';
import { gateway, grant, input, listener, namespace, route, rule, service } from './fixtures.js';

const GROUP = 'gateway.networking.k8s.io';

describe('hostname intersection (listener ∩ route)', () => {
  it.each([
    { name: 'neither names a host', listener: undefined, route: [], expected: [null] },
    {
      name: 'only the route names hosts',
      listener: undefined,
      route: ['a.com', 'b.com'],
      expected: ['a.com', 'b.com'],
    },
    { name: 'only the listener names a host', listener: 'a.com', route: [], expected: ['a.com'] },
    {
      name: 'exact equals exact',
      listener: 'foo.example.com',
      route: ['foo.example.com'],
      expected: ['foo.example.com'],
    },
    { name: 'exact differs from exact', listener: 'foo.example.com', route: ['bar.example.com'], expected: [] },
    {
      name: 'wildcard listener keeps the route names it covers',
      listener: '*.example.com',
      route: ['test.example.com', 'foo.test.example.com', 'test.example.net'],
      expected: ['test.example.com', 'foo.test.example.com'],
    },
    {
      name: 'wildcard listener does not cover its bare suffix',
      listener: '*.example.com',
      route: ['example.com'],
      expected: [],
    },
    {
      name: 'wildcard route narrows to the exact listener',
      listener: 'foo.example.com',
      route: ['*.example.com'],
      expected: ['foo.example.com'],
    },
    {
      name: 'wildcard route does not cover another domain',
      listener: 'foo.example.net',
      route: ['*.example.com'],
      expected: [],
    },
    {
      name: 'narrower wildcard route',
      listener: '*.example.com',
      route: ['*.foo.example.com'],
      expected: ['*.foo.example.com'],
    },
    {
      name: 'narrower wildcard listener',
      listener: '*.foo.example.com',
      route: ['*.example.com'],
      expected: ['*.foo.example.com'],
    },
    { name: 'equal wildcards', listener: '*.example.com', route: ['*.example.com'], expected: ['*.example.com'] },
    {
      name: 'a suffix that is not a label boundary',
      listener: '*.example.com',
      route: ['fooexample.com'],
      expected: [],
    },
  ])('$name', ({ listener: l, route: r, expected }) => {
    expect(intersectHostnames(l, r)).toEqual(expected);
  });

  it('a listener serves a route under the intersected names, most specific first', () => {
    const i = input({
      gateways: [gateway([listener('http', { hostname: '*.example.com' })])],
      httpRoutes: [route('r', { hostnames: ['*.a.example.com', 'b.example.com', 'other.net'] }), route('s')],
    });
    const hosts = buildGatewayRoutes(i).listeners[0]?.hosts;
    // Each host lists its own routes first, then those of the broader names that cover it.
    expect(hosts?.map((h) => [h.hostname, h.routes.map((r) => `${r.route.name}@${r.hostname}`)])).toEqual([
      ['b.example.com', ['r@b.example.com', 's@*.example.com']],
      ['*.a.example.com', ['r@*.a.example.com', 's@*.example.com']],
      ['*.example.com', ['s@*.example.com']],
    ]);
  });

  it('a more specific hostname comes first even against a higher-precedence match', () => {
    // The spec orders by the route's matching hostname before the match rules: an Exact path of a
    // route without hostnames comes after a prefix `/` of a route that names the host.
    const i = input({
      httpRoutes: [
        route('any', { rules: [rule([{ path: { type: 'Exact', value: '/x' } }])] }),
        route('named', { hostnames: ['a.com'], rules: [rule([{ path: { type: 'PathPrefix', value: '/' } }])] }),
      ],
    });
    const hosts = buildGatewayRoutes(i).listeners[0]?.hosts;
    expect(hosts?.map((h) => [h.hostname, h.routes.map((r) => r.route.name)])).toEqual([
      ['a.com', ['named', 'any']],
      [null, ['any']],
    ]);
  });
});

/** resolved is the ResolvedRefs reason of route `r`'s one parent. */
function resolved(i: GatewayInput): string {
  const result = buildGatewayRoutes(i);
  const refs = result.status.httpRoutes[0]?.parents[0]?.conditions.find((c) => c.type === 'ResolvedRefs');
  return refs?.reason ?? 'none';
}

const crossRoute = route('r', { rules: [{ backendRefs: [{ name: 'web', namespace: 'other', port: 80 }] }] });
const fromRoute = { group: GROUP, kind: 'HTTPRoute', namespace: 'default' };
const toService = { group: '', kind: 'Service' };

describe('ReferenceGrant for a backend in another namespace', () => {
  it.each([
    { name: 'no grant: denied', grants: [], expected: 'RefNotPermitted' },
    {
      name: 'grant for all Services: allowed',
      grants: [grant('other', [fromRoute], [toService])],
      expected: 'ResolvedRefs',
    },
    {
      name: 'grant naming this Service: allowed',
      grants: [grant('other', [fromRoute], [{ ...toService, name: 'web' }])],
      expected: 'ResolvedRefs',
    },
    {
      name: 'grant naming another Service: denied',
      grants: [grant('other', [fromRoute], [{ ...toService, name: 'api' }])],
      expected: 'RefNotPermitted',
    },
    {
      name: 'grant from another namespace: denied',
      grants: [grant('other', [{ ...fromRoute, namespace: 'third' }], [toService])],
      expected: 'RefNotPermitted',
    },
    {
      name: 'grant from another kind: denied',
      grants: [grant('other', [{ ...fromRoute, kind: 'GRPCRoute' }], [toService])],
      expected: 'RefNotPermitted',
    },
    {
      name: 'grant in the route namespace (not the target): denied',
      grants: [grant('default', [fromRoute], [toService])],
      expected: 'RefNotPermitted',
    },
  ])('$name', ({ grants, expected }) => {
    const i = input({ httpRoutes: [crossRoute], services: [service('web', 'other')], referenceGrants: grants });
    expect(resolved(i)).toBe(expected);
  });

  it('an allowed backend is served with its namespace', () => {
    const i = input({
      httpRoutes: [crossRoute],
      services: [service('web', 'other')],
      referenceGrants: [grant('other', [fromRoute], [toService])],
    });
    expect(buildGatewayRoutes(i).listeners[0]?.hosts[0]?.routes[0]?.backends).toEqual([
      { kind: 'service', namespace: 'other', name: 'web', port: 80, weight: 1 },
    ]);
  });
});

describe('allowedRoutes namespaces', () => {
  const team = { team: 'blue' };
  it.each([
    { name: 'Same: a route beside the Gateway', from: { from: 'Same' }, routeNs: 'default', expected: 'Accepted' },
    { name: 'Same: a route elsewhere', from: { from: 'Same' }, routeNs: 'other', expected: 'NotAllowedByListeners' },
    { name: 'default is Same', from: undefined, routeNs: 'other', expected: 'NotAllowedByListeners' },
    { name: 'All: a route elsewhere', from: { from: 'All' }, routeNs: 'other', expected: 'Accepted' },
    {
      name: 'Selector matchLabels: a labelled namespace',
      from: { from: 'Selector', selector: { matchLabels: team } },
      routeNs: 'blue',
      expected: 'Accepted',
    },
    {
      name: 'Selector matchLabels: an unlabelled namespace (even the Gateway’s own)',
      from: { from: 'Selector', selector: { matchLabels: team } },
      routeNs: 'default',
      expected: 'NotAllowedByListeners',
    },
    {
      name: 'Selector matchExpressions In',
      from: {
        from: 'Selector',
        selector: { matchExpressions: [{ key: 'team', operator: 'In', values: ['red', 'blue'] }] },
      },
      routeNs: 'blue',
      expected: 'Accepted',
    },
    {
      name: 'Selector matchExpressions DoesNotExist',
      from: { from: 'Selector', selector: { matchExpressions: [{ key: 'team', operator: 'DoesNotExist' }] } },
      routeNs: 'blue',
      expected: 'NotAllowedByListeners',
    },
  ])('$name', ({ from, routeNs, expected }) => {
    const i = input({
      gateways: [gateway([listener('http', from ? { allowedRoutes: { namespaces: from } } : {})])],
      httpRoutes: [route('r', { namespace: routeNs, parentRefs: [{ name: 'gw', namespace: 'default' }] })],
      services: [service('web', routeNs)],
      namespaces: [namespace('default'), namespace('other'), namespace('blue', team)],
    });
    const accepted = buildGatewayRoutes(i).status.httpRoutes[0]?.parents[0]?.conditions[0];
    expect(accepted?.reason).toBe(expected);
  });

  it('sectionName attaches to one listener only', () => {
    const i = input({
      gateways: [gateway([listener('a', { hostname: 'a.com' }), listener('b', { port: 8080 })])],
      httpRoutes: [route('r', { parentRefs: [{ name: 'gw', sectionName: 'b' }] })],
    });
    const result = buildGatewayRoutes(i);
    expect(result.listeners.map((l) => [l.listener, l.hosts.length])).toEqual([
      ['a', 0],
      ['b', 1],
    ]);
  });
});
