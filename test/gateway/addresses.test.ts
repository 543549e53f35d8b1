/**
 * Per-Gateway addresses (`--gateway-addresses`): which Gateway gets which address of the pool, the conditions when
 * none is left or a requested one cannot be used, and the nginx servers each Gateway gets on its own address.
 */
import { describe, expect, it } from 'vitest';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions, type BuildOptions } from '../../src/model/build-types.js';
import { buildGatewayRoutes, type GatewayInput } from '../../src/model/gateway/index.js';
import type { Snapshot } from '../../src/model/snapshot.js';
import { ingress, ingressClass, serviceWithEndpoints, snapshotOf } from '../support/manifests.js';
import { CONTROLLER, gateway, gatewayClass, input, listener, route } from './fixtures.js';

type Obj = Record<string, unknown>;

/** gw is Gateway `default/<name>` created at minute `minute`, with spec.addresses and status.addresses as given. */
function gw(name: string, minute: number | null, o: { spec?: Obj[]; status?: string[]; listeners?: Obj[] } = {}): Obj {
  const g = gateway(o.listeners ?? [listener('http')], name, 'default', o.spec ? { addresses: o.spec } : {});
  const meta = g.metadata as Obj;
  if (minute !== null) meta.creationTimestamp = `2026-01-01T00:${String(minute).padStart(2, '0')}:00Z`;
  return o.status ? { ...g, status: { addresses: o.status.map((value) => ({ type: 'IPAddress', value })) } } : g;
}

const ip = (value: string) => ({ type: 'IPAddress', value });
const POOL = ['10.0.0.1', '10.0.0.2', '10.0.0.3'];

/** summary is each Gateway's address (or its Accepted/Programmed reasons when it has none). */
function summary(gateways: Obj[], pool: readonly string[] | null): Record<string, string> {
  const parts: GatewayInput = { ...input({ gateways }), ...(pool ? { addresses: pool } : {}) };
  const result = buildGatewayRoutes(parts);
  return Object.fromEntries(
    result.status.gateways.map((g) => {
      const reasons = g.conditions.filter((c) => c.status === 'False').map((c) => `${c.type}=${c.reason}`);
      return [g.name, g.addresses === undefined ? 'shared' : [...g.addresses, ...reasons].join(' ')];
    }),
  );
}

describe('assigning pool addresses', () => {
  const cases: { name: string; gateways: Obj[]; pool?: null; want: Record<string, string> }[] = [
    {
      name: 'oldest first, whatever the names',
      gateways: [gw('a', 5), gw('b', 1), gw('c', 3)],
      want: { a: '10.0.0.3', b: '10.0.0.1', c: '10.0.0.2' },
    },
    {
      name: 'same age: namespace/name; no creation time: last',
      gateways: [gw('z', null), gw('b', 1), gw('a', 1)],
      want: { a: '10.0.0.1', b: '10.0.0.2', z: '10.0.0.3' },
    },
    {
      name: 'pool exhausted: the newest is Programmed=False AddressNotAssigned, the others keep theirs',
      gateways: [gw('a', 1), gw('b', 2), gw('c', 3), gw('d', 4)],
      want: { a: '10.0.0.1', b: '10.0.0.2', c: '10.0.0.3', d: 'Programmed=AddressNotAssigned' },
    },
    {
      name: 'a Gateway keeps the address its status holds, so removing an older one moves nobody',
      gateways: [gw('b', 2, { status: ['10.0.0.2'] }), gw('c', 3, { status: ['10.0.0.3'] }), gw('d', 4)],
      want: { b: '10.0.0.2', c: '10.0.0.3', d: '10.0.0.1' },
    },
    {
      name: 'a status address outside the pool (the publish address) is not kept',
      gateways: [gw('a', 1, { status: ['127.0.0.1'] })],
      want: { a: '10.0.0.1' },
    },
    {
      name: 'spec.addresses names a pool address: that one, and no other Gateway gets it',
      gateways: [gw('a', 1), gw('s', 2, { spec: [ip('10.0.0.1')] }), gw('b', 3)],
      want: { a: '10.0.0.2', s: '10.0.0.1', b: '10.0.0.3' },
    },
    {
      name: 'an IPAddress without value: any free one',
      gateways: [gw('a', 1, { spec: [{ type: 'IPAddress' }] })],
      want: { a: '10.0.0.1' },
    },
    {
      name: 'a requested address outside the pool: Programmed=False AddressNotUsable',
      gateways: [gw('s', 1, { spec: [ip('192.0.2.1')] })],
      want: { s: 'Programmed=AddressNotUsable' },
    },
    {
      name: 'a requested address an older Gateway requested first: AddressNotUsable',
      gateways: [gw('s', 1, { spec: [ip('10.0.0.2')] }), gw('t', 2, { spec: [ip('10.0.0.2')] })],
      want: { s: '10.0.0.2', t: 'Programmed=AddressNotUsable' },
    },
    {
      name: 'a newer Gateway naming the address an older one holds (status) gets AddressNotUsable; the holder keeps it',
      gateways: [gw('victim', 1, { status: ['10.0.0.1'] }), gw('thief', 2, { spec: [ip('10.0.0.1')] })],
      want: { victim: '10.0.0.1', thief: 'Programmed=AddressNotUsable' },
    },
    {
      name: 'the holder keeps it whichever order the Gateways come in, and the claimant still gets nothing else',
      gateways: [gw('thief', 2, { spec: [ip('10.0.0.1')] }), gw('b', 3), gw('victim', 1, { status: ['10.0.0.1'] })],
      want: { victim: '10.0.0.1', thief: 'Programmed=AddressNotUsable', b: '10.0.0.2' },
    },
    {
      name: 'a holder keeps its address against an older spec claim too (it was free when it got it)',
      gateways: [gw('s', 1, { spec: [ip('10.0.0.2')] }), gw('h', 2, { status: ['10.0.0.2'] })],
      want: { s: 'Programmed=AddressNotUsable', h: '10.0.0.2' },
    },
    {
      name: 'a holder whose spec now names another address moves to it, freeing the old one',
      gateways: [gw('h', 1, { spec: [ip('10.0.0.3')], status: ['10.0.0.1'] }), gw('b', 2)],
      want: { h: '10.0.0.3', b: '10.0.0.1' },
    },
    {
      name: 'two Gateways whose status shows one address: the oldest keeps it',
      gateways: [gw('new', 2, { status: ['10.0.0.1'] }), gw('old', 1, { status: ['10.0.0.1'] })],
      want: { old: '10.0.0.1', new: '10.0.0.2' },
    },
    {
      name: 'a usable and an unusable address: AddressNotUsable (one address per Gateway)',
      gateways: [gw('s', 1, { spec: [ip('192.0.2.1'), ip('10.0.0.3')] })],
      want: { s: 'Programmed=AddressNotUsable' },
    },
    {
      name: 'a type other than IPAddress: Accepted=False UnsupportedAddress, no address',
      gateways: [gw('h', 1, { spec: [{ type: 'Hostname', value: 'gw.example' }] }), gw('a', 2)],
      want: { h: 'Accepted=UnsupportedAddress Programmed=Invalid', a: '10.0.0.1' },
    },
    {
      name: 'an IPAddress that is no IP address: UnsupportedAddress',
      gateways: [gw('h', 1, { spec: [ip('not an ip')] })],
      want: { h: 'Accepted=UnsupportedAddress Programmed=Invalid' },
    },
    {
      name: 'a Gateway no listener of which is accepted gets none, and takes none',
      gateways: [gw('bad', 1, { listeners: [listener('x', { protocol: 'example.com/sctp' })] }), gw('a', 2)],
      want: { bad: 'Accepted=ListenersNotValid Programmed=Invalid', a: '10.0.0.1' },
    },
    {
      name: 'without the pool: spec.addresses are ignored and every Gateway shares the publish address',
      gateways: [gw('a', 1), gw('s', 2, { spec: [{ type: 'Hostname', value: 'x' }] })],
      pool: null,
      want: { a: 'shared', s: 'shared' },
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      expect(summary(c.gateways, c.pool === null ? null : POOL)).toEqual(c.want);
    });

  it('AddressNotUsable names the holder only when it is in the claimant’s namespace', () => {
    const holder = { ...gw('victim', 1, { status: ['10.0.0.1'] }) };
    const elsewhere = { ...holder, metadata: { ...(holder.metadata as Obj), namespace: 'other' } };
    const message = (victim: Obj) =>
      buildGatewayRoutes({
        ...input({ gateways: [victim, gw('thief', 2, { spec: [ip('10.0.0.1')] })] }),
        addresses: POOL,
      })
        .status.gateways.find((g) => g.name === 'thief')
        ?.conditions.find((c) => c.type === 'Programmed')?.message;
    expect(message(holder)).toBe('spec.addresses: 10.0.0.1 is in use by Gateway default/victim, which keeps it');
    expect(message(elsewhere)).toBe(
      'spec.addresses: 10.0.0.1 is in use by a Gateway of another namespace, which keeps it',
    );
  });

  it('a Gateway without an address serves nothing, and its listeners are not Programmed', () => {
    const result = buildGatewayRoutes({ ...input({ gateways: [gw('a', 1), gw('b', 2)] }), addresses: ['10.0.0.9'] });
    expect(result.listeners.map((l) => [l.gateway.name, l.address])).toEqual([['a', '10.0.0.9']]);
    const b = result.status.gateways.find((g) => g.name === 'b');
    expect(b?.listeners[0]?.conditions.find((c) => c.type === 'Programmed')).toMatchObject({
      status: 'False',
      reason: 'Pending',
    });
    expect(b?.addresses).toEqual([]);
  });
});

const LUA = { modules: [], packagePath: '/lua/?.lua;;', controlSocket: '/run/c.sock', requestMetrics: false };
const options: BuildOptions = {
  ...defaultBuildOptions,
  dynamic: LUA,
  gateway: { controllerName: CONTROLLER, addresses: ['127.0.0.200', '127.0.0.201', '::1'] },
};

const snapshot = (objects: Obj[], gatewayObjects: Obj[]): Snapshot => snapshotOf([...objects, ...gatewayObjects]);

describe('nginx servers on the Gateways’ own addresses', () => {
  const web = serviceWithEndpoints('web', [{ ip: '10.0.0.1', port: 8080 }]);
  const to = (name: string) => [{ name, namespace: 'default' }];
  const gateways = [
    gatewayClass(),
    gw('one', 1),
    gw('two', 2, { listeners: [listener('http'), listener('named', { hostname: 'shared.test', port: 8081 })] }),
    gw('three', 3, { listeners: [listener('named', { hostname: 'only.test' })] }),
    route('r1', { parentRefs: to('one') }),
    route('r2', { parentRefs: to('two'), hostnames: ['shared.test'] }),
    route('r3', { parentRefs: to('three') }),
  ];
  const objects = [ingressClass(), ingress('old', { 'shared.test': [{ path: '/', service: 'web' }] }), ...web];

  it('listens on address:port per Gateway, a catch-all default_server on each, and keeps Ingress hosts apart', () => {
    const result = buildModel(snapshot(objects, gateways), options);
    expect(result.problems).toEqual([]);
    expect(
      result.model.gateway?.servers.map((s) => `${s.listen} ${s.host}${s.defaultServer ? ' default' : ''}`),
    ).toEqual([
      '127.0.0.200:80 _ default',
      '127.0.0.201:80 _ default',
      '127.0.0.201:80 shared.test',
      '[::1]:80 _ default',
      '[::1]:80 only.test',
      '127.0.0.201:8081 _ default',
      '127.0.0.201:8081 shared.test',
    ]);
    // the Ingress default server stays default_server on the shared address
    expect(result.model.gatewayDefault).toEqual({ http: false, https: false });
    // the empty catch-alls (no route) answer 404 in the router
    const keys = Object.fromEntries(result.model.gateway!.routes.servers.map((s) => [s.key, s.routes.length]));
    expect(keys).toMatchObject({ '::1:80/_': 0, '::1:80/only.test': 1 });
    expect(result.gateway?.status.gateways.map((g) => [g.name, g.addresses])).toEqual([
      ['one', ['127.0.0.200']],
      ['three', ['::1']],
      ['two', ['127.0.0.201']],
    ]);
  });

  it('without the Lua balancer: nothing served, so no Gateway shows a pool address', () => {
    const result = buildModel(snapshot(objects, gateways), { ...options, dynamic: undefined });
    expect(result.gateway?.status.gateways.map((g) => g.addresses)).toEqual([[], [], []]);
  });

  it('without the pool: one shared address, the Ingress keeps its host, one catch-all for both Gateways', () => {
    const shared = buildModel(snapshot(objects, gateways), { ...options, gateway: { controllerName: CONTROLLER } });
    expect(shared.model.gateway?.servers.map((s) => `${s.listen} ${s.host}`)).toEqual([
      '80 _',
      '80 only.test',
      '8081 shared.test',
    ]);
    expect(shared.gateway?.status.gateways.every((g) => g.addresses === undefined)).toBe(true);
  });
});

describe('listener isolation', () => {
  const web = serviceWithEndpoints('web', [{ ip: '10.0.0.1', port: 8080 }]);
  const l = (name: string, hostname?: string) => listener(name, hostname ? { hostname } : {});
  // gateway-http-listener-isolation-with-hostname-intersection.yaml, shortened: every route names every host
  const hosts = ['bar.com', 'bar.example.com', 'bar.foo.example.com', 'abc.foo.example.com'];
  const r = (section: string) =>
    route(section, {
      parentRefs: [{ name: 'gw', namespace: 'default', sectionName: section }],
      hostnames: hosts,
      rules: [
        { matches: [{ path: { type: 'PathPrefix', value: `/${section}` } }], backendRefs: [{ name: 'web', port: 80 }] },
      ],
    });
  const objects = [
    gatewayClass(),
    gateway([l('empty'), l('wild', '*.example.com'), l('fwild', '*.foo.example.com'), l('abc', 'abc.foo.example.com')]),
    r('empty'),
    r('wild'),
    r('fwild'),
    r('abc'),
  ];

  it.each([
    [{ controllerName: CONTROLLER }, ''],
    [{ controllerName: CONTROLLER, addresses: ['127.0.0.200'] }, '127.0.0.200:'],
  ])('each host is served by the most specific listener matching it only (%j)', (gateway, prefix) => {
    const result = buildModel(snapshot([...web], objects), { ...options, gateway });
    const served = Object.fromEntries(
      result.model.gateway!.routes.servers.map((s) => [s.key, [...new Set(s.routes.map((x) => x.route))]]),
    );
    expect(served).toMatchObject({
      [`${prefix}80/bar.com`]: ['default/empty#0'],
      [`${prefix}80/bar.example.com`]: ['default/wild#0'],
      [`${prefix}80/bar.foo.example.com`]: ['default/fwild#0'],
      [`${prefix}80/abc.foo.example.com`]: ['default/abc#0'],
    });
  });
});
