/**
 * GRPCRoute in the pure core: the reader (a method match is a path match), the GRPCRoute precedence, the listener
 * kinds, ReferenceGrants from GRPCRoute, one kind per listener and hostname, and the h2c rule of the data path.
 */
import { describe, expect, it } from 'vitest';
import { buildModel } from '../../src/model/build.js';
import { buildGatewayRoutes, readGRPCRoute } from '../../src/model/gateway/index.js';
import { ingress, ingressClass, serviceWithEndpoints, snapshotOf } from '../support/manifests.js';
import {
  CONTROLLER,
  GATEWAY_OPTIONS,
  gateway,
  gatewayClass,
  grant,
  grpcRoute,
  input,
  listener,
  route,
  service,
} from './fixtures.js';

const SVC = 'pkg.Echo';
const OLD = '2026-01-01T00:00:00Z';
const NEW = '2026-06-01T00:00:00Z';
const grpcRule = (matches: Record<string, unknown>[], extra: Record<string, unknown> = {}) => ({
  matches,
  backendRefs: [{ name: 'web', port: 80 }],
  ...extra,
});
const m = (method: Record<string, unknown>, headers?: Record<string, unknown>[]) => ({
  method,
  ...(headers ? { headers } : {}),
});

describe('reading a GRPCRoute: the method match is a path match on /<service>/<method>', () => {
  it.each([
    {
      name: 'service and method',
      match: m({ service: SVC, method: 'Say' }),
      path: { type: 'Exact', value: '/pkg.Echo/Say' },
    },
    { name: 'service only', match: m({ service: SVC }), path: { type: 'PathPrefix', value: '/pkg.Echo/' } },
    { name: 'method only', match: m({ method: 'Say' }), path: { type: 'RegularExpression', value: '/[^/]+/Say' } },
    { name: 'no method: any call', match: {}, path: { type: 'PathPrefix', value: '/' } },
    {
      name: 'RegularExpression, both',
      match: m({ type: 'RegularExpression', service: 'pkg\\.E.*', method: 'S[a-z]+' }),
      path: { type: 'RegularExpression', value: '/(?:pkg\\.E.*)/(?:S[a-z]+)' },
    },
    {
      name: 'RegularExpression, service only: any method segment',
      match: m({ type: 'RegularExpression', service: 'pkg\\..*' }),
      path: { type: 'RegularExpression', value: '/(?:pkg\\..*)/(?:[^/]+)' },
    },
  ])('$name', ({ match, path }) => {
    const r = readGRPCRoute(grpcRoute('r', { rules: [grpcRule([match])] }));
    expect(r?.invalid).toEqual([]);
    expect(r?.kind).toBe('GRPCRoute');
    expect(r?.rules[0]?.matches[0]?.path).toEqual(path);
  });

  it('a rule without matches matches every call', () => {
    const r = readGRPCRoute(grpcRoute('r', { rules: [{ backendRefs: [{ name: 'web', port: 80 }] }] }));
    expect(r?.rules[0]?.matches.map((x) => x.path)).toEqual([{ type: 'PathPrefix', value: '/' }]);
    expect(r?.rules[0]?.matches[0]?.grpc).toBeDefined();
  });

  it.each([
    {
      name: 'an Exact match with neither service nor method',
      match: m({ type: 'Exact' }),
      field: 'spec.rules[0].matches[0].method',
    },
    {
      name: 'a service that is not a proto name',
      match: m({ service: 'pkg/Echo' }),
      field: 'spec.rules[0].matches[0].method.service',
    },
    {
      name: 'a method with a dot',
      match: m({ service: SVC, method: 'a.b' }),
      field: 'spec.rules[0].matches[0].method.method',
    },
    { name: 'a method with a newline', match: m({ method: 'Say\n' }), field: 'spec.rules[0].matches[0].method.method' },
    {
      name: 'an unknown type',
      match: m({ type: 'Prefix', service: SVC }),
      field: 'spec.rules[0].matches[0].method.type',
    },
    {
      name: 'a regex outside the safe subset',
      match: m({ type: 'RegularExpression', service: '(a+)+\\1' }),
      field: 'spec.rules[0].matches[0].method.service',
    },
    {
      name: 'a header value with a newline',
      match: m({ service: SVC }, [{ name: 'x', value: 'a\nb' }]),
      field: 'spec.rules[0].matches[0].headers[0].value',
    },
  ])('refuses $name', ({ match, field }) => {
    const r = readGRPCRoute(grpcRoute('r', { rules: [grpcRule([match])] }));
    expect(r?.invalid.map((i) => i.field)).toContain(field);
    // a refused method leaves the match out; a refused header match is left out alone (the route is not accepted)
    if (field.includes('.method')) expect(r?.rules[0]?.matches).toEqual([]);
    else expect(r?.rules[0]?.matches[0]?.headers).toEqual([]);
  });

  it.each([
    { type: 'URLRewrite', urlRewrite: {} },
    { type: 'RequestRedirect', requestRedirect: {} },
    { type: 'RequestMirror', requestMirror: { backendRef: { name: 'web', port: 80 } } },
    { type: 'ExtensionRef', extensionRef: { group: 'x', kind: 'Y', name: 'z' } },
  ])('refuses the $type filter', (filter) => {
    const r = readGRPCRoute(grpcRoute('r', { rules: [grpcRule([], { filters: [filter] })] }));
    expect(r?.invalid.map((i) => i.field)).toEqual(['spec.rules[0].filters[0].type']);
  });

  it('reads header modifiers and header matches', () => {
    const r = readGRPCRoute(
      grpcRoute('r', {
        rules: [
          grpcRule([m({ service: SVC }, [{ type: 'RegularExpression', name: 'Version', value: 'v[0-9]' }])], {
            filters: [
              { type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-a', value: '1' }] } },
              { type: 'ResponseHeaderModifier', responseHeaderModifier: { remove: ['x-b'] } },
            ],
          }),
        ],
      }),
    );
    expect(r?.invalid).toEqual([]);
    expect(r?.rules[0]?.matches[0]?.headers).toEqual([{ type: 'RegularExpression', name: 'Version', value: 'v[0-9]' }]);
    expect(r?.rules[0]?.filters.map((f) => f.type)).toEqual(['RequestHeaderModifier', 'ResponseHeaderModifier']);
  });
});

/** served lists `route#rule` in the order the listener's one host serves them. */
function served(grpcRoutes: Record<string, unknown>[], httpRoutes: Record<string, unknown>[] = []): string[] {
  const result = buildGatewayRoutes(input({ grpcRoutes, httpRoutes }));
  expect(result.problems).toEqual([]);
  const hosts = result.listeners[0]?.hosts ?? [];
  expect(hosts).toHaveLength(1);
  return (hosts[0]?.routes ?? []).map((r) => `${r.route.name}#${r.ruleIndex}`);
}

describe('GRPCRoute precedence', () => {
  // Each row: the winner is the newer route (and later by name) so only the criterion can put it first.
  it.each([
    {
      name: 'Exact before RegularExpression',
      loser: m({ type: 'RegularExpression', service: 'pkg\\.Echo', method: 'Say' }),
      winner: m({ service: SVC }),
    },
    { name: 'more characters in the service', loser: m({ service: 'pkg.E' }), winner: m({ service: SVC }) },
    {
      name: 'service and method before service only',
      loser: m({ service: SVC }),
      winner: m({ service: SVC, method: 'S' }),
    },
    { name: 'service before method only', loser: m({ method: 'SayHelloLonger' }), winner: m({ service: SVC }) },
    { name: 'more characters in the method', loser: m({ method: 'Say' }), winner: m({ method: 'SayMore' }) },
    {
      name: 'more header matches',
      loser: m({ service: SVC, method: 'Say' }),
      winner: m({ service: SVC, method: 'Say' }, [{ name: 'x', value: '1' }]),
    },
    { name: 'any method last', loser: {}, winner: m({ method: 'S' }) },
  ])('$name', ({ loser, winner }) => {
    const routes = [
      grpcRoute('a', { created: OLD, rules: [grpcRule([loser])] }),
      grpcRoute('b', { created: NEW, rules: [grpcRule([winner])] }),
    ];
    expect(served(routes)).toEqual(['b#0', 'a#0']);
  });

  it('on a tie: the older route, then by namespace/name, then rule order', () => {
    const same = () => [grpcRule([m({ service: SVC })]), grpcRule([m({ service: SVC })])];
    expect(
      served([
        grpcRoute('b', { created: NEW, rules: same() }),
        grpcRoute('c', { created: OLD, rules: same() }),
        grpcRoute('a', { created: NEW, rules: same() }),
      ]),
    ).toEqual(['c#0', 'c#1', 'a#0', 'a#1', 'b#0', 'b#1']);
  });
});

const GROUP = 'gateway.networking.k8s.io';
const conditions = (
  r: { parents: readonly { conditions: readonly { type: string; status: string; reason: string }[] }[] } | undefined,
) => r?.parents.map((p) => p.conditions.map((c) => `${c.type}=${c.status}/${c.reason}`));

describe('GRPCRoute status', () => {
  it.each([
    {
      name: 'accepted on an HTTP listener by default',
      gateways: [gateway()],
      routes: [grpcRoute('r')],
      want: ['Accepted=True/Accepted', 'ResolvedRefs=True/ResolvedRefs'],
    },
    {
      name: 'not allowed where the listener takes HTTPRoute only',
      gateways: [gateway([listener('http', { allowedRoutes: { kinds: [{ kind: 'HTTPRoute' }] } })])],
      routes: [grpcRoute('r')],
      want: ['Accepted=False/NotAllowedByListeners', 'ResolvedRefs=True/ResolvedRefs'],
    },
    {
      name: 'a backend in another namespace without a grant',
      gateways: [gateway()],
      routes: [grpcRoute('r', { rules: [{ backendRefs: [{ name: 'web', namespace: 'other', port: 80 }] }] })],
      want: ['Accepted=True/Accepted', 'ResolvedRefs=False/RefNotPermitted'],
    },
    {
      name: 'a refused match: UnsupportedValue',
      gateways: [gateway()],
      routes: [grpcRoute('r', { rules: [grpcRule([m({ service: 'a b' })])] })],
      want: ['Accepted=False/UnsupportedValue', 'ResolvedRefs=True/ResolvedRefs'],
    },
  ])('$name', ({ gateways, routes, want }) => {
    const result = buildGatewayRoutes(input({ gateways, grpcRoutes: routes }));
    expect(conditions(result.status.grpcRoutes?.[0])).toEqual([want]);
    expect(result.status.httpRoutes).toEqual([]);
  });

  it('a ReferenceGrant from GRPCRoute lets its backend resolve; one from HTTPRoute does not', () => {
    const r = grpcRoute('r', { rules: [{ backendRefs: [{ name: 'web', namespace: 'other', port: 80 }] }] });
    const to = [{ group: '', kind: 'Service' }];
    const refs = (kind: string) =>
      buildGatewayRoutes(
        input({
          grpcRoutes: [r],
          services: [service('web', 'other')],
          referenceGrants: [grant('other', [{ group: GROUP, kind, namespace: 'default' }], to)],
        }),
      ).status.grpcRoutes?.[0]?.parents[0]?.conditions[1]?.reason;
    expect(refs('GRPCRoute')).toBe('ResolvedRefs');
    expect(refs('HTTPRoute')).toBe('RefNotPermitted');
  });

  it('listeners list both kinds and count both in attachedRoutes; a GRPCRoute-only listener refuses HTTPRoutes', () => {
    const result = buildGatewayRoutes(
      input({
        gateways: [
          gateway([
            listener('both', { hostname: 'a.test' }),
            listener('grpc', { port: 8080, allowedRoutes: { kinds: [{ kind: 'GRPCRoute' }] } }),
          ]),
        ],
        httpRoutes: [
          route('h', { parentRefs: [{ name: 'gw', sectionName: 'both' }], hostnames: ['a.test'] }),
          route('h2', { parentRefs: [{ name: 'gw', sectionName: 'grpc' }] }),
        ],
        grpcRoutes: [grpcRoute('g', { hostnames: ['b.test'] })],
      }),
    );
    const listeners = result.status.gateways[0]?.listeners;
    expect(listeners?.map((l) => [l.name, l.supportedKinds.map((k) => k.kind), l.attachedRoutes])).toEqual([
      ['both', ['HTTPRoute', 'GRPCRoute'], 1],
      ['grpc', ['GRPCRoute'], 1],
    ]);
    expect(conditions(result.status.httpRoutes.find((r) => r.name === 'h2'))?.[0]?.[0]).toBe(
      'Accepted=False/NotAllowedByListeners',
    );
  });

  it('an HTTPRoute and a GRPCRoute with hostnames in common on one listener: the older is accepted', () => {
    const result = buildGatewayRoutes(
      input({
        httpRoutes: [
          route('web', { created: NEW, hostnames: ['*.example.com'] }),
          route('other', { created: NEW, hostnames: ['other.net'] }),
        ],
        grpcRoutes: [grpcRoute('grpc', { created: OLD, hostnames: ['api.example.com'] })],
      }),
    );
    expect(conditions(result.status.grpcRoutes?.[0])?.[0]?.[0]).toBe('Accepted=True/Accepted');
    expect(conditions(result.status.httpRoutes.find((r) => r.name === 'web'))?.[0]?.[0]).toBe(
      'Accepted=False/NotAllowedByListeners',
    );
    expect(conditions(result.status.httpRoutes.find((r) => r.name === 'other'))?.[0]?.[0]).toBe(
      'Accepted=True/Accepted',
    );
    expect(result.status.gateways[0]?.listeners[0]?.attachedRoutes).toBe(2);
    const hosts = result.listeners[0]?.hosts.map((h) => [
      h.hostname,
      h.routes.map((r) => `${r.kind ?? 'HTTPRoute'}/${r.route.name}`),
    ]);
    expect(hosts).toEqual([
      ['api.example.com', ['GRPCRoute/grpc']],
      ['other.net', ['HTTPRoute/other']],
    ]);
  });
});

describe('the h2c rule: a plaintext socket speaks h2c only when all it serves is GRPCRoutes', () => {
  const options = GATEWAY_OPTIONS;
  function build(gatewayObjects: Record<string, unknown>[], addresses?: string[]) {
    const objects = [
      ingressClass(),
      ingress('legacy', { 'legacy.test': [{ path: '/', service: 'web' }] }),
      ...serviceWithEndpoints('web', [{ ip: '127.0.0.2', port: 8080 }]),
    ];
    const snapshot = snapshotOf([...objects, ...gatewayObjects]);
    return buildModel(
      snapshot,
      addresses ? { ...options, gateway: { controllerName: CONTROLLER, addresses } } : options,
    );
  }
  const gw = gateway([listener('http'), listener('grpc', { port: 9000 }), listener('mixed', { port: 9001 })]);
  const at = (section: string) => [{ name: 'gw', sectionName: section }];

  it.each([
    {
      name: 'GRPCRoutes alone on port 9000: h2c; on the http port (Ingress there): refused',
      objects: [grpcRoute('g', { parentRefs: [...at('grpc'), ...at('http')], hostnames: ['g.test'] })],
      h2c: ['9000'],
      refused: [],
      problems: ['GRPCRoute g spec.parentRefs'],
    },
    {
      name: 'an HTTPRoute beside a GRPCRoute on port 9001: HTTP/1.1, the GRPCRoute is refused (served nowhere)',
      objects: [
        grpcRoute('g', { parentRefs: at('mixed'), hostnames: ['g.test'] }),
        route('h', { parentRefs: at('mixed'), hostnames: ['h.test'] }),
      ],
      h2c: [],
      refused: ['g'],
      problems: ['GRPCRoute g spec.parentRefs'],
    },
    {
      name: 'no route on a port: HTTP/1.1',
      objects: [route('h', { parentRefs: at('mixed'), hostnames: ['h.test'] })],
      h2c: [],
      refused: [],
      problems: [],
    },
  ])('$name', ({ objects, h2c, refused, problems }) => {
    const result = build([gatewayClass(), gw, ...objects]);
    const servers = result.model.gateway?.servers ?? [];
    expect(servers.filter((s) => s.h2c).map((s) => s.listen)).toEqual(h2c);
    const notAccepted = (result.gateway?.status.grpcRoutes ?? []).filter((r) =>
      r.parents.some((p) => p.conditions.some((c) => c.type === 'Accepted' && c.status === 'False')),
    );
    expect(notAccepted.map((r) => r.name)).toEqual(refused);
    for (const r of notAccepted)
      expect(r.parents[0]?.conditions[0]).toMatchObject({
        reason: 'NotAllowedByListeners',
        message: expect.stringMatching(/h2c/),
      });
    expect(result.problems.filter((p) => p.kind === 'GRPCRoute').map((p) => `${p.kind} ${p.name} ${p.field}`)).toEqual(
      problems,
    );
    // what is served on a refused socket has no gRPC entry
    const entries =
      result.model.gateway?.routes.servers.flatMap((s) => s.routes.filter((r) => r.grpc).map(() => s.key)) ?? [];
    expect(entries.every((k) => h2c.some((p) => k.startsWith(`${p}/`)))).toBe(true);
  });

  it('with --gateway-addresses each Gateway port 80 is a socket of its own: h2c when it serves only GRPCRoutes', () => {
    const grpcOnly = gateway([listener('http')], 'rpc');
    const web = gateway([listener('http')], 'web');
    const result = build(
      [
        gatewayClass(),
        grpcOnly,
        web,
        grpcRoute('g', { parentRefs: [{ name: 'rpc' }], hostnames: ['g.test'] }),
        route('h', { parentRefs: [{ name: 'web' }], hostnames: ['h.test'] }),
      ],
      ['10.0.0.1', '10.0.0.2'],
    );
    const servers = result.model.gateway?.servers ?? [];
    const rpc = servers.filter((s) => s.gateways.includes('default/rpc'));
    const webServers = servers.filter((s) => s.gateways.includes('default/web'));
    expect(rpc.length).toBeGreaterThan(0);
    expect(rpc.every((s) => s.h2c && s.listen === rpc[0]?.listen)).toBe(true);
    expect(webServers.every((s) => !s.h2c)).toBe(true);
    expect(result.problems.filter((p) => p.kind === 'GRPCRoute')).toEqual([]);
  });
});
