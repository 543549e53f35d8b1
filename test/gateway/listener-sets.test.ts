/**
 * ListenerSets in the core (src/model/gateway/listener-sets.ts): which sets a Gateway admits, the merged listeners'
 * conflicts in the spec's order, their status, the Gateway's attachedListenerSets, and routes through a
 * ListenerSet parentRef. Tables: the smallest input that shows each rule.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildModel } from '../../src/model/build.js';
import { buildGatewayRoutes, type GatewayInput } from '../../src/model/gateway/index.js';
import { checkDnsLabel, checkHost, checkPortNumber } from '../../src/model/validate.js';
import { ingress, ingressClass, serviceWithEndpoints, snapshotOf } from '../support/manifests.js';
import {
  GATEWAY_OPTIONS,
  gateway,
  gatewayClass,
  grant,
  input,
  listener,
  listenerSet,
  namespace,
  route,
  service,
  tlsSecret,
} from './fixtures.js';

type Obj = Record<string, unknown>;
const GROUP = 'gateway.networking.k8s.io';

const allowing = (from: Obj, listeners: Obj[] = [listener('http', { hostname: 'gw.example.com' })]) =>
  gateway(listeners, 'gw', 'default', { allowedListeners: { namespaces: from } });

const show = (conditions: readonly { type: string; status: string; reason: string }[] | undefined) =>
  (conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason}`);

/** setStatus is ListenerSet `namespace/name`'s conditions and each listener's, as `type=status/reason`. */
function setStatus(i: GatewayInput, name: string, ns = 'default') {
  const s = buildGatewayRoutes(i).status.listenerSets?.find((l) => l.name === name && l.namespace === ns);
  if (s === undefined) return undefined;
  return {
    conditions: show(s.conditions),
    listeners: Object.fromEntries(s.listeners.map((l) => [l.name, show(l.conditions)])),
  };
}

const SERVED = ['Accepted=True/Accepted', 'ResolvedRefs=True/ResolvedRefs', 'Conflicted=False/NoConflicts'];
const served = [...SERVED, 'Programmed=True/Programmed'];
const setAccepted = ['Accepted=True/Accepted', 'Programmed=True/Programmed'];
const notAllowed = ['Accepted=False/NotAllowed', 'Programmed=False/NotAllowed'];

describe('which ListenerSets a Gateway admits (spec.allowedListeners)', () => {
  const rows: { name: string; from: Obj | undefined; setNamespace: string; admitted: boolean }[] = [
    { name: 'absent: none (the default)', from: undefined, setNamespace: 'default', admitted: false },
    { name: 'None', from: { from: 'None' }, setNamespace: 'default', admitted: false },
    { name: 'Same, same namespace', from: { from: 'Same' }, setNamespace: 'default', admitted: true },
    { name: 'Same, another namespace', from: { from: 'Same' }, setNamespace: 'other', admitted: false },
    { name: 'All, another namespace', from: { from: 'All' }, setNamespace: 'other', admitted: true },
    {
      name: 'Selector matching the namespace',
      from: { from: 'Selector', selector: { matchLabels: { team: 'a' } } },
      setNamespace: 'other',
      admitted: true,
    },
    {
      name: 'Selector not matching',
      from: { from: 'Selector', selector: { matchLabels: { team: 'b' } } },
      setNamespace: 'other',
      admitted: false,
    },
    {
      name: 'Selector with a refused label value: none',
      from: { from: 'Selector', selector: { matchLabels: { team: 'a b' } } },
      setNamespace: 'other',
      admitted: false,
    },
    { name: 'an unknown from: none', from: { from: 'Everyone' }, setNamespace: 'other', admitted: false },
  ];
  it.each(rows)('$name', ({ from, setNamespace, admitted }) => {
    const i = input({
      gateways: [from === undefined ? gateway() : allowing(from)],
      listenerSets: [
        listenerSet('ls', [listener('extra', { hostname: 'ls.example.com' })], { namespace: setNamespace }),
      ],
      namespaces: [namespace('default'), namespace('other', { team: 'a' })],
    });
    const out = buildGatewayRoutes(i);
    expect(setStatus(i, 'ls', setNamespace)?.conditions).toEqual(admitted ? setAccepted : notAllowed);
    const gw = out.status.gateways.find((g) => g.name === 'gw');
    expect(gw?.attachedListenerSets ?? 0).toBe(admitted ? 1 : 0);
    // the Gateway's status lists its own listeners only
    expect(gw?.listeners.map((l) => l.name)).not.toContain('extra');
    expect(out.listeners.some((l) => l.hosts.length >= 0 && l.hostname === 'ls.example.com')).toBe(admitted);
    if (!admitted)
      expect(out.problems.some((p) => p.kind === 'ListenerSet' && p.field === 'spec.parentRef')).toBe(true);
  });

  it('a ListenerSet naming another controller’s Gateway, or another kind, gets no status', () => {
    const i = input({
      gateways: [allowing({ from: 'All' })],
      listenerSets: [
        listenerSet('theirs', [listener('a')], { parent: { name: 'not-ours' } }),
        listenerSet('odd', [listener('a')], { parent: { name: 'gw', kind: 'Service', group: '' } }),
      ],
    });
    expect(buildGatewayRoutes(i).status.listenerSets).toBeUndefined();
  });

  it('a refused parent (infrastructure parameters): ParentNotAccepted, nothing served', () => {
    const gw = gateway([listener('http')], 'gw', 'default', {
      allowedListeners: { namespaces: { from: 'All' } },
      infrastructure: { parametersRef: { group: 'x', kind: 'Y', name: 'z' } },
    });
    const i = input({
      gateways: [gw],
      listenerSets: [listenerSet('ls', [listener('a', { hostname: 'a.example.com' })])],
    });
    expect(setStatus(i, 'ls')?.conditions).toEqual([
      'Accepted=False/ParentNotAccepted',
      'Programmed=False/ParentNotProgrammed',
    ]);
    expect(buildGatewayRoutes(i).listeners).toEqual([]);
  });
});

describe('a parent without an address', () => {
  it('the set stays accepted but is not programmed (ParentNotProgrammed), its listeners Pending', () => {
    const i = {
      ...input({ gateways: [allowing({ from: 'Same' })], listenerSets: [listenerSet('ls', [listener('a')])] }),
      addresses: [],
    };
    expect(setStatus(i, 'ls')).toEqual({
      conditions: ['Accepted=True/Accepted', 'Programmed=False/ParentNotProgrammed'],
      listeners: { a: [...SERVED, 'Programmed=False/Pending'] },
    });
    expect(buildGatewayRoutes(i).listeners).toEqual([]);
  });
});

describe('merged listeners: the Gateway first, then sets oldest first, then by namespace/name', () => {
  const conflicted = (reason: string) => [
    `Accepted=False/${reason}`,
    'ResolvedRefs=True/ResolvedRefs',
    `Conflicted=True/${reason}`,
    `Programmed=False/${reason}`,
  ];
  const host = (hostname: string, extra: Obj = {}) => listener(hostname.split('.')[0]!, { hostname, ...extra });
  const rows: {
    name: string;
    sets: Obj[];
    expected: Record<string, { conditions: string[]; listeners: Record<string, string[]> }>;
  }[] = [
    {
      name: "a set's listener with the Gateway's hostname and port loses; the set stays accepted by its other one",
      sets: [listenerSet('ls', [host('gw.example.com'), host('mine.example.com')])],
      expected: {
        ls: {
          conditions: ['Accepted=True/ListenersNotValid', 'Programmed=True/Programmed'],
          listeners: { gw: conflicted('HostnameConflict'), mine: served },
        },
      },
    },
    {
      name: 'a set whose only listener conflicts is not accepted (ListenersNotValid)',
      sets: [listenerSet('ls', [host('gw.example.com')])],
      expected: {
        ls: {
          conditions: ['Accepted=False/ListenersNotValid', 'Programmed=False/ListenersNotValid'],
          listeners: { gw: conflicted('HostnameConflict') },
        },
      },
    },
    {
      name: "a TCP listener on the Gateway's HTTP port: ProtocolConflict",
      sets: [listenerSet('ls', [listener('tcp', { protocol: 'TCP' }), host('mine.example.com')])],
      expected: {
        ls: {
          conditions: ['Accepted=True/ListenersNotValid', 'Programmed=True/Programmed'],
          listeners: { tcp: conflicted('ProtocolConflict'), mine: served },
        },
      },
    },
    {
      name: 'two sets with one hostname: the older keeps it, whatever the names',
      sets: [
        listenerSet('a-newer', [host('same.example.com')], { created: '2026-01-02T00:00:00Z' }),
        listenerSet('b-older', [host('same.example.com')], { created: '2026-01-01T00:00:00Z' }),
      ],
      expected: {
        'b-older': { conditions: setAccepted, listeners: { same: served } },
        'a-newer': {
          conditions: ['Accepted=False/ListenersNotValid', 'Programmed=False/ListenersNotValid'],
          listeners: { same: conflicted('HostnameConflict') },
        },
      },
    },
    {
      name: 'two sets created together: the first by namespace/name keeps it',
      sets: [listenerSet('b', [host('same.example.com')]), listenerSet('a', [host('same.example.com')])],
      expected: {
        a: { conditions: setAccepted, listeners: { same: served } },
        b: {
          conditions: ['Accepted=False/ListenersNotValid', 'Programmed=False/ListenersNotValid'],
          listeners: { same: conflicted('HostnameConflict') },
        },
      },
    },
    {
      name: 'a refused hostname: the listener is not accepted and never served',
      sets: [listenerSet('ls', [listener('bad', { hostname: 'a b.example.com' }), host('mine.example.com')])],
      expected: {
        ls: {
          conditions: ['Accepted=True/ListenersNotValid', 'Programmed=True/Programmed'],
          listeners: {
            bad: [
              'Accepted=False/UnsupportedValue',
              'ResolvedRefs=True/ResolvedRefs',
              'Conflicted=False/NoConflicts',
              'Programmed=False/Invalid',
            ],
            mine: served,
          },
        },
      },
    },
  ];
  it.each(rows)('$name', ({ sets, expected }) => {
    const i = input({ gateways: [allowing({ from: 'Same' })], listenerSets: sets });
    for (const [name, want] of Object.entries(expected)) expect(setStatus(i, name), name).toEqual(want);
    const out = buildGatewayRoutes(i);
    // the Gateway's own listener never gives way to a set's
    expect(show(out.status.gateways[0]?.listeners[0]?.conditions)).toEqual(served);
    const accepted = Object.values(expected).filter((e) => e.conditions[0]?.startsWith('Accepted=True')).length;
    expect(out.status.gateways[0]?.attachedListenerSets).toBe(accepted);
    // what is served: the Gateway's hostname once, and each set listener that won
    const hostnames = out.listeners.map((l) => l.hostname).sort();
    const won = Object.values(expected).flatMap((e) =>
      Object.entries(e.listeners).flatMap(([n, c]) => (c.at(-1) === 'Programmed=True/Programmed' ? [n] : [])),
    );
    expect(hostnames).toEqual(['gw.example.com', ...won.map((n) => `${n}.example.com`)].sort());
  });
});

describe('routes and ListenerSets', () => {
  const ls = (listeners: Obj[], o: { namespace?: string } = {}) => listenerSet('ls', listeners, o);
  const toSet = (extra: Obj = {}) => ({
    group: GROUP,
    kind: 'ListenerSet',
    name: 'ls',
    namespace: 'default',
    ...extra,
  });
  const parents = (i: GatewayInput, name: string) =>
    buildGatewayRoutes(i)
      .status.httpRoutes.find((r) => r.name === name)
      ?.parents.map((p) => `${p.parentRef.kind}/${p.parentRef.sectionName ?? ''}: ${show(p.conditions)[0]}`);
  const base = (routes: Obj[], setNamespace = 'default') =>
    input({
      gateways: [allowing({ from: 'All' })],
      listenerSets: [
        ls(
          [
            listener('one', { hostname: 'one.example.com', allowedRoutes: { namespaces: { from: 'Same' } } }),
            listener('two', { hostname: 'two.example.com', allowedRoutes: { namespaces: { from: 'All' } } }),
          ],
          { namespace: setNamespace },
        ),
      ],
      httpRoutes: routes,
      services: [service('web'), service('web', 'other')],
    });

  it('a ListenerSet parentRef attaches to its listeners only; a Gateway one to the Gateway’s only', () => {
    const i = base([route('to-set', { parentRefs: [toSet()] }), route('to-gw')]);
    expect(parents(i, 'to-set')).toEqual(['ListenerSet/: Accepted=True/Accepted']);
    expect(parents(i, 'to-gw')).toEqual(['Gateway/: Accepted=True/Accepted']);
    const out = buildGatewayRoutes(i);
    const routesOf = (hostname: string) =>
      out.listeners.find((l) => l.hostname === hostname)?.hosts.flatMap((h) => h.routes.map((r) => r.route.name));
    expect(routesOf('one.example.com')).toEqual(['to-set']);
    expect(routesOf('two.example.com')).toEqual(['to-set']);
    expect(routesOf('gw.example.com')).toEqual(['to-gw']);
    const set = out.status.listenerSets?.[0];
    expect(set?.listeners.map((l) => [l.name, l.attachedRoutes])).toEqual([
      ['one', 1],
      ['two', 1],
    ]);
    expect(out.status.gateways[0]?.listeners.map((l) => [l.name, l.attachedRoutes])).toEqual([['http', 1]]);
  });

  it('sectionName picks one listener of the set; a Gateway parentRef cannot name a set’s listener', () => {
    const i = base([
      route('section', { parentRefs: [toSet({ sectionName: 'two' })] }),
      route('through-gw', { parentRefs: [{ name: 'gw', namespace: 'default', sectionName: 'two' }] }),
      route('port', { parentRefs: [toSet({ port: 8080 })] }),
    ]);
    expect(parents(i, 'section')).toEqual(['ListenerSet/two: Accepted=True/Accepted']);
    expect(parents(i, 'through-gw')).toEqual(['Gateway/two: Accepted=False/NoMatchingParent']);
    expect(parents(i, 'port')).toEqual(['ListenerSet/: Accepted=False/NoMatchingParent']);
    const out = buildGatewayRoutes(i);
    expect(out.listeners.find((l) => l.hostname === 'one.example.com')?.hosts).toEqual([]);
  });

  it("allowedRoutes Same is the ListenerSet's namespace, not the Gateway's", () => {
    const routes = [
      route('in-set-ns', { namespace: 'other', parentRefs: [toSet({ namespace: 'other', sectionName: 'one' })] }),
      route('in-gw-ns', { parentRefs: [toSet({ namespace: 'other', sectionName: 'one' })] }),
    ];
    const i = base(routes, 'other');
    expect(parents(i, 'in-set-ns')).toEqual(['ListenerSet/one: Accepted=True/Accepted']);
    expect(parents(i, 'in-gw-ns')).toEqual(['ListenerSet/one: Accepted=False/NotAllowedByListeners']);
  });

  it('a parentRef to a ListenerSet the Gateway does not admit: NoMatchingParent; to an unknown one: no status', () => {
    const i = input({
      gateways: [gateway([listener('http')])],
      listenerSets: [ls([listener('one', { hostname: 'one.example.com' })])],
      httpRoutes: [route('r', { parentRefs: [toSet()] }), route('unknown', { parentRefs: [toSet({ name: 'nope' })] })],
    });
    expect(parents(i, 'r')).toEqual(['ListenerSet/: Accepted=False/NoMatchingParent']);
    expect(parents(i, 'unknown')).toBeUndefined();
  });
});

describe("a ListenerSet's certificateRefs", () => {
  const https = (ref: Obj) =>
    listener('secure', {
      port: 443,
      protocol: 'HTTPS',
      hostname: 'secure.example.com',
      tls: { certificateRefs: [ref] },
    });
  const rows: { name: string; setNamespace: string; ref: Obj; grants: Obj[]; expected: string }[] = [
    {
      name: "a Secret in the set's namespace",
      setNamespace: 'other',
      ref: { name: 'cert' },
      grants: [],
      expected: 'True/ResolvedRefs',
    },
    {
      name: "another namespace's Secret without a grant",
      setNamespace: 'other',
      ref: { name: 'cert', namespace: 'default' },
      grants: [],
      expected: 'False/RefNotPermitted',
    },
    {
      name: "a grant to the Gateway's kind does not serve the set",
      setNamespace: 'other',
      ref: { name: 'cert', namespace: 'default' },
      grants: [
        grant('default', [{ group: GROUP, kind: 'Gateway', namespace: 'other' }], [{ group: '', kind: 'Secret' }]),
      ],
      expected: 'False/RefNotPermitted',
    },
    {
      name: 'a grant from ListenerSets of its namespace',
      setNamespace: 'other',
      ref: { name: 'cert', namespace: 'default' },
      grants: [
        grant('default', [{ group: GROUP, kind: 'ListenerSet', namespace: 'other' }], [{ group: '', kind: 'Secret' }]),
      ],
      expected: 'True/ResolvedRefs',
    },
  ];
  it.each(rows)('$name', ({ setNamespace, ref, grants, expected }) => {
    const i = input({
      gateways: [allowing({ from: 'All' })],
      listenerSets: [listenerSet('ls', [https(ref)], { namespace: setNamespace })],
      referenceGrants: grants,
      secrets: [tlsSecret('cert', 'default'), tlsSecret('cert', 'other')],
    });
    const status = setStatus(i, 'ls', setNamespace);
    expect(status?.listeners.secure?.[1]).toBe(`ResolvedRefs=${expected}`);
    const ok = expected.startsWith('True');
    expect(status?.conditions[0]).toBe(ok ? 'Accepted=True/Accepted' : 'Accepted=False/ListenersNotValid');
    const servedHere = buildGatewayRoutes(i).listeners.find((l) => l.hostname === 'secure.example.com');
    expect(servedHere?.certificates).toEqual(
      ok ? [{ namespace: ref.namespace ?? setNamespace, name: 'cert' }] : undefined,
    );
  });
});

describe('hostile ListenerSets', () => {
  it('never throw, and what is served of them passed the validators', () => {
    const anyValue = fc.anything({ maxDepth: 3 });
    const arbListener = fc.record({
      name: fc.oneof(fc.string(), fc.constantFrom('a', 'b')),
      hostname: fc.oneof(fc.string(), fc.constantFrom('*.a.com', 'a.com', 'gw.example.com'), anyValue),
      port: fc.oneof(fc.constantFrom(80, 443, 8080), anyValue),
      protocol: fc.oneof(fc.constantFrom('HTTP', 'HTTPS', 'TCP'), fc.string()),
      tls: anyValue,
      allowedRoutes: anyValue,
    });
    const arbSet = fc.record({
      namespace: fc.constantFrom('default', 'other'),
      parentRef: fc.oneof(fc.constant({ name: 'gw', namespace: 'default' }), anyValue),
      listeners: fc.oneof(fc.array(arbListener, { maxLength: 3 }), anyValue),
    });
    fc.assert(
      fc.property(fc.array(arbSet, { maxLength: 3 }), (sets) => {
        const result = buildGatewayRoutes(
          input({
            gateways: [allowing({ from: 'All' })],
            listenerSets: sets.map((s, i) => ({
              ...listenerSet(`ls${i}`, [], { namespace: s.namespace }),
              spec: { parentRef: s.parentRef, listeners: s.listeners },
            })),
            httpRoutes: [route('r')],
          }),
        );
        for (const served of result.listeners) {
          if (served.hostname !== undefined) expect(checkHost(served.hostname).ok).toBe(true);
          expect(checkPortNumber(served.port).ok).toBe(true);
          expect(['HTTP', 'HTTPS']).toContain(served.protocol);
        }
        // a set's status names only listeners whose names passed
        for (const set of result.status.listenerSets ?? [])
          for (const l of set.listeners) expect(checkDnsLabel(l.name).ok || /^#\d+$/.test(l.name)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});

describe('in the build, beside an Ingress', () => {
  it("a set's listener is one more server of its Gateway; a host an Ingress names stays the Ingress's", () => {
    const objects = [
      ingressClass(),
      ...serviceWithEndpoints('web', [{ port: 8080 }]),
      ingress('web', { 'web.test': [{ path: '/', service: 'web', port: 80 }] }),
      gatewayClass(),
      allowing({ from: 'Same' }),
      listenerSet('ls', [listener('team', { hostname: 'team.test' }), listener('web', { hostname: 'web.test' })]),
      route('r', { parentRefs: [{ group: GROUP, kind: 'ListenerSet', name: 'ls', namespace: 'default' }] }),
    ];
    const result = buildModel(snapshotOf(objects as { kind?: string }[]), GATEWAY_OPTIONS);
    // the Gateway's own listener has no route, so no server (a named listener's server is its routes')
    expect(result.model.gateway?.servers.map((s) => `${s.listen} ${s.host}`)).toEqual(['80 team.test']);
    // the route's web.test hostname is the Ingress's: a Problem on the route, the route served on team.test
    expect(result.problems).toContainEqual(
      expect.objectContaining({ kind: 'HTTPRoute', name: 'r', field: 'spec.hostnames' }),
    );
  });
});
