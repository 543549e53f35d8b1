/**
 * The Gateway API in the build: RequestMirror and timeouts read as the spec says, buildModel's `gateway` result and
 * servers, the routes table, the Ingress-vs-HTTPRoute host rule, and the GatewayClass without Lua.
 */
import { describe, expect, it } from 'vitest';
import type { BuildOptions } from '../../src/model/build-types.js';
import { buildModel } from '../../src/model/build.js';
import { servedNames, tablesForReload } from '../../src/model/dynamic-tables.js';
import { DynamicSplit } from '../../src/sync/dynamic-split.js';
import { buildGatewayRoutes, checkDuration, readHTTPRoute } from '../../src/model/gateway/index.js';
import type { Snapshot } from '../../src/model/snapshot.js';
import { issueCertificate } from '../../src/tls/issue.js';
import { ingress, ingressClass, serviceWithEndpoints, snapshotOf, tlsSecret } from '../support/manifests.js';
import {
  CONTROLLER,
  GATEWAY_OPTIONS,
  gateway,
  gatewayClass,
  grant,
  input,
  listener,
  route,
  service,
} from './fixtures.js';

const options = GATEWAY_OPTIONS;

const snapshot = (objects: Record<string, unknown>[], gatewayObjects: Record<string, unknown>[]): Snapshot =>
  snapshotOf([...objects, ...gatewayObjects]);

describe('reading timeouts', () => {
  it.each([
    ['10s', 10_000],
    ['500ms', 500],
    ['1m30s', 90_000],
    ['1h', 3_600_000],
    ['0s', 0],
  ])('%s is %d ms', (text, ms) => {
    expect(checkDuration(text)).toEqual({ ok: true, value: ms });
  });

  it.each(['10', '1.5s', '-1s', 's', '1d', '123456s', '1h1m1s1ms1s', ' 1s', 10])('%s is refused', (text) => {
    expect(checkDuration(text).ok).toBe(false);
  });

  it.each([
    { name: 'both, backendRequest shorter', timeouts: { request: '10s', backendRequest: '2s' }, invalid: [] },
    { name: 'request alone', timeouts: { request: '10s' }, invalid: [] },
    { name: 'backendRequest alone', timeouts: { backendRequest: '1s' }, invalid: [] },
    { name: 'request 0s: no limit', timeouts: { request: '0s', backendRequest: '1h' }, invalid: [] },
    {
      name: 'backendRequest longer than request',
      timeouts: { request: '1s', backendRequest: '2s' },
      invalid: ['spec.rules[0].timeouts.backendRequest'],
    },
    {
      name: 'backendRequest 0s (none) under a set request',
      timeouts: { request: '1s', backendRequest: '0s' },
      invalid: ['spec.rules[0].timeouts.backendRequest'],
    },
    { name: 'a bad duration', timeouts: { request: '1 s' }, invalid: ['spec.rules[0].timeouts.request'] },
  ])('$name', ({ timeouts, invalid }) => {
    const r = readHTTPRoute(route('r', { rules: [{ timeouts, backendRefs: [{ name: 'web', port: 80 }] }] }));
    expect(r?.invalid.map((i) => i.field)).toEqual(invalid);
  });
});

describe('RequestMirror', () => {
  const mirrorRoute = (backendRef: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    route('r', {
      rules: [
        {
          filters: [{ type: 'RequestMirror', requestMirror: { backendRef, ...extra } }],
          backendRefs: [{ name: 'web', port: 80 }],
        },
      ],
    });

  it.each([
    { name: 'a Service beside the route', ref: { name: 'shadow', port: 80 }, grants: [], mirror: 'default/shadow' },
    {
      name: 'a Service elsewhere, granted',
      ref: { name: 'shadow', namespace: 'other', port: 80 },
      grants: [
        grant(
          'other',
          [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'default' }],
          [{ group: '', kind: 'Service' }],
        ),
      ],
      mirror: 'other/shadow',
    },
    {
      name: 'a Service elsewhere, not granted',
      ref: { name: 'shadow', namespace: 'other', port: 80 },
      grants: [],
      mirror: 'RefNotPermitted',
    },
    { name: 'a port the Service lacks', ref: { name: 'shadow', port: 81 }, grants: [], mirror: 'BackendNotFound' },
    {
      name: 'not a Service',
      ref: { name: 'shadow', kind: 'Bucket', group: 'x.io', port: 80 },
      grants: [],
      mirror: 'InvalidKind',
    },
  ])('$name', ({ ref, grants, mirror }) => {
    const out = buildGatewayRoutes(
      input({
        httpRoutes: [mirrorRoute(ref)],
        services: [service('web'), service('shadow'), service('shadow', 'other')],
        referenceGrants: grants,
      }),
    );
    const served = out.listeners[0]?.hosts[0]?.routes[0]?.mirrors[0];
    const got = served?.kind === 'service' ? `${served.namespace}/${served.name}` : served?.reason;
    expect(got).toBe(mirror);
    const resolvedRefs = out.status.httpRoutes[0]?.parents[0]?.conditions[1];
    expect(resolvedRefs?.status).toBe(mirror.includes('/') ? 'True' : 'False');
  });

  it.each([
    { name: 'neither: every request', share: {}, percent: 100, invalid: [] },
    { name: 'percent', share: { percent: 25 }, percent: 25, invalid: [] },
    { name: 'fraction', share: { fraction: { numerator: 1, denominator: 4 } }, percent: 25, invalid: [] },
    { name: 'fraction of 100 by default', share: { fraction: { numerator: 5 } }, percent: 5, invalid: [] },
    { name: 'percent over 100', share: { percent: 101 }, percent: undefined, invalid: ['.percent'] },
    { name: 'both', share: { percent: 1, fraction: { numerator: 1 } }, percent: undefined, invalid: [''] },
    {
      name: 'numerator over denominator',
      share: { fraction: { numerator: 3, denominator: 2 } },
      percent: undefined,
      invalid: ['.fraction'],
    },
  ])('mirror share: $name', ({ share, percent, invalid }) => {
    const r = readHTTPRoute(mirrorRoute({ name: 'shadow', port: 80 }, share));
    expect(r?.invalid.map((i) => i.field)).toEqual(invalid.map((f) => `spec.rules[0].filters[0].requestMirror${f}`));
    const filter = r?.rules[0]?.filters[0];
    expect(filter?.type === 'RequestMirror' ? filter.percent : undefined).toBe(percent);
  });

  it('refuses a third RequestMirror (nginx.conf has two mirror slots)', () => {
    const mirror = { type: 'RequestMirror', requestMirror: { backendRef: { name: 'shadow', port: 80 } } };
    const r = readHTTPRoute(route('r', { rules: [{ filters: [mirror, mirror, mirror], backendRefs: [] }] }));
    expect(r?.invalid.map((i) => i.message)).toEqual(['at most 2 RequestMirror filters are supported']);
  });

  it('refuses a Service backendRef without a port', () => {
    const r = readHTTPRoute(mirrorRoute({ name: 'shadow' }));
    expect(r?.invalid.map((i) => i.field)).toEqual(['spec.rules[0].filters[0].requestMirror.backendRef.port']);
  });
});

// issued for other.test only: a listener serves it for its hostnames all the same (the Gateway API's rule)
const pair = await issueCertificate({ commonName: 'other.test', dnsNames: ['other.test'] });

describe('HTTPS listeners: servers and certificates', () => {
  const X = 'certificates/default_x.pem';
  const https = (extra: Record<string, unknown> = {}) =>
    listener('https', { port: 443, protocol: 'HTTPS', tls: { certificateRefs: [{ name: 'x' }] }, ...extra });
  it.each([
    {
      name: 'no hostname, a route with one: the route host pushed, and a catch-all naming the file',
      listeners: [https()],
      routes: [route('r', { hostnames: ['example.org'] })],
      servers: [`_ - ${X} default_server`, `example.org ${X} -`],
    },
    {
      name: 'no hostname, no route: the catch-all alone (names no route serves get its certificate and 404)',
      listeners: [https()],
      routes: [],
      servers: [`_ - ${X} default_server`],
    },
    {
      name: 'no hostname, a route without hostname: the catch-all',
      listeners: [https()],
      routes: [route('r')],
      servers: [`_ - ${X} default_server`],
    },
    {
      name: 'a hostname the certificate does not name: pushed all the same',
      listeners: [https({ hostname: 'second.test' })],
      routes: [route('r')],
      servers: [`second.test ${X} -`],
    },
    {
      name: 'both, one Secret: pushed for the named host and still a file for the catch-all',
      listeners: [https(), https({ name: 'named', hostname: 'second.test' })],
      routes: [route('r', { hostnames: ['example.org'] }), route('s', { hostnames: ['second.test'] })],
      servers: [`_ - ${X} default_server`, `example.org ${X} -`, `second.test ${X} -`],
    },
  ])('$name', ({ listeners, routes, servers }) => {
    const objects = [
      ...serviceWithEndpoints('web', [{ ip: '10.0.0.1', port: 8080 }]),
      tlsSecret('x', pair.certPem, pair.keyPem),
    ];
    const result = buildModel(snapshot(objects, [gatewayClass(), gateway(listeners), ...routes]), options);
    expect(result.problems).toEqual([]);
    expect(
      result.model.gateway?.servers.map(
        (s) =>
          `${s.host} ${s.certificateFile ?? '-'} ${s.fileCertificate ?? '-'}${s.defaultServer ? ' default_server' : ''}`,
      ),
    ).toEqual(servers);
    const { model, tables } = new DynamicSplit().split(result.model);
    const named = servers.filter((s) => !s.startsWith('_')).map((s) => s.split(' ')[0]);
    // pushed by each named server's key, not by hostname
    const keys = new Map(result.model.gateway?.servers.map((s) => [s.host, s.key]));
    expect(servedNames(tables.certificates)).toEqual(named.map((h) => `server ${keys.get(h!)}`));
    // nginx.conf names the catch-all's file, so it stays among the files written
    expect(model.certificates.map((c) => c.file).includes(X)).toBe(servers.some((s) => s.startsWith('_')));
  });
});

describe('buildModel with the Gateway API', () => {
  const web = serviceWithEndpoints('web', [{ ip: '10.0.0.1', port: 8080 }]);
  const gw = [
    gatewayClass(),
    gateway([listener('http'), listener('alt', { port: 8081 })]),
    route('r', { hostnames: ['app.test', 'shared.test'] }),
  ];

  it('is off without BuildOptions.gateway: no result, no servers', () => {
    const result = buildModel(snapshot([...web], gw), { ...options, gateway: undefined });
    expect(result.gateway).toBeNull();
    expect(result.model.gateway).toBeNull();
  });

  it('makes one server per port and hostname, the Ingress upstream name, and a routes table', () => {
    const result = buildModel(snapshot([...web], gw), options);
    expect(result.model.gateway?.servers.map((s) => `${s.listen} ${s.host}`)).toEqual([
      '80 app.test',
      '80 shared.test',
      '8081 app.test',
      '8081 shared.test',
    ]);
    expect(result.model.upstreams.map((u) => u.name)).toContain('default_web_80');
    const routes = result.model.gateway!.routes;
    expect(routes.servers.map((s) => s.key)).toEqual([
      '80/app.test',
      '80/shared.test',
      '8081/app.test',
      '8081/shared.test',
    ]);
    expect(routes.servers[0]?.routes).toEqual([
      {
        route: 'default/r#0',
        path: { type: 'PathPrefix', value: '/' },
        headers: [],
        queryParams: [],
        filters: [],
        backends: [{ backend: 'default_web_80', weight: 1 }],
        timeouts: {},
      },
    ]);
    const { tables } = new DynamicSplit().split(result.model);
    expect(tables.routes).toBe(routes);
    expect(tables.backends.backends.find((b) => b.name === 'default_web_80')?.endpoints).toEqual([
      { address: '10.0.0.1', port: 8080 },
    ]);
  });

  it('maps ports 80 and 443 to --http-port and --https-port, and honours the listen address', () => {
    const result = buildModel(snapshot([...web], gw), { ...options, httpPort: 8080, listenAddress: '127.0.0.1' });
    expect(result.model.gateway?.servers.map((s) => s.listen)).toEqual([
      '127.0.0.1:8080',
      '127.0.0.1:8080',
      '127.0.0.1:8081',
      '127.0.0.1:8081',
    ]);
    // the redirect port is the Gateway listener's, not nginx's
    expect(result.model.gateway?.routes.servers[0]?.port).toBe(80);
  });

  it('leaves a host an Ingress names on port 80 to the Ingress, with a Problem; other ports keep it', () => {
    const objects = [ingressClass(), ingress('old', { 'shared.test': [{ path: '/', service: 'web' }] }), ...web];
    const result = buildModel(snapshot(objects, gw), options);
    expect(result.model.gateway?.servers.map((s) => `${s.listen} ${s.host}`)).toEqual([
      '80 app.test',
      '8081 app.test',
      '8081 shared.test',
    ]);
    expect(result.problems).toContainEqual({
      kind: 'HTTPRoute',
      namespace: 'default',
      name: 'r',
      field: 'spec.hostnames',
      message: 'host shared.test on port 80 is served by Ingress default/old; this route is not served for it',
    });
    // the route keeps a hostname: still accepted
    expect(result.gateway?.status.httpRoutes[0]?.parents[0]?.conditions[0]?.status).toBe('True');
  });

  it('a route left without any hostname is Accepted=False NoMatchingListenerHostname', () => {
    const objects = [ingressClass(), ingress('old', { 'shared.test': [{ path: '/', service: 'web' }] }), ...web];
    const only80 = [gatewayClass(), gateway([listener('http')]), route('r', { hostnames: ['shared.test'] })];
    const result = buildModel(snapshot(objects, only80), options);
    expect(result.model.gateway?.servers).toEqual([]);
    const accepted = result.gateway?.status.httpRoutes[0]?.parents[0]?.conditions[0];
    expect(accepted).toMatchObject({ status: 'False', reason: 'NoMatchingListenerHostname' });
  });

  it('the catch-all is the Gateway’s (default_server) unless an Ingress has a rule without host', () => {
    const catchAll = [gatewayClass(), gateway([listener('http')]), route('r')];
    const mine = buildModel(snapshot([...web], catchAll), options);
    expect(mine.model.gateway?.servers.map((s) => [s.host, s.defaultServer])).toEqual([['_', true]]);
    expect(mine.model.gatewayDefault.http).toBe(true);
    const objects = [ingressClass(), ingress('any', { '': [{ path: '/', service: 'web' }] }), ...web];
    const theirs = buildModel(snapshot(objects, catchAll), options);
    expect(theirs.model.gateway?.servers).toEqual([]);
    expect(theirs.model.gatewayDefault.http).toBe(false);
  });

  it('without the Lua balancer: no Gateway servers, and the GatewayClass is Accepted=False saying why', () => {
    const result = buildModel(snapshot([...web], gw), { ...options, dynamic: undefined });
    expect(result.model.gateway).toBeNull();
    expect(result.gateway?.listeners).toEqual([]);
    const accepted = result.gateway?.status.gatewayClasses[0]?.conditions[0];
    expect(accepted).toMatchObject({ status: 'False', reason: 'UnsupportedNginx' });
    expect(accepted?.message).toMatch(/Lua balancer/);
    const [status] = result.gateway?.status.gateways ?? [];
    expect(status?.conditions.find((c) => c.type === 'Programmed')).toMatchObject({ status: 'False' });
    expect(
      status?.listeners.every((l) => l.conditions.some((c) => c.type === 'Programmed' && c.status === 'False')),
    ).toBe(true);
  });

  it('is pure: the same snapshot gives the same model and tables', () => {
    const s = snapshot([...web], gw);
    const a = buildModel(s, options);
    const b = buildModel(s, options);
    expect(b.model).toEqual(a.model);
    expect(b.gateway).toEqual(a.gateway);
  });

  it('gives a server mirror slots only while one of its routes mirrors, as many as the most mirrors of a route', () => {
    const mirror = { type: 'RequestMirror', requestMirror: { backendRef: { name: 'web', port: 80 } } };
    const slotsOf = (filters: Record<string, unknown>[]) => {
      const routes = [
        gatewayClass(),
        gateway([listener('http')]),
        route('plain', { hostnames: ['plain.test'] }),
        route('copied', {
          hostnames: ['copied.test'],
          rules: [
            {
              matches: [{ path: { type: 'PathPrefix', value: '/a' } }],
              filters,
              backendRefs: [{ name: 'web', port: 80 }],
            },
            { backendRefs: [{ name: 'web', port: 80 }] },
          ],
        }),
      ];
      const servers = buildModel(snapshot([...web], routes), options).model.gateway?.servers ?? [];
      return Object.fromEntries(servers.map((s) => [s.host, s.mirrorSlots]));
    };
    expect(slotsOf([])).toEqual({ 'copied.test': [], 'plain.test': [] });
    expect(slotsOf([mirror])).toEqual({ 'copied.test': [1], 'plain.test': [] });
    expect(slotsOf([mirror, { ...mirror, requestMirror: { ...mirror.requestMirror, percent: 0 } }])).toEqual({
      'copied.test': [1, 2],
      'plain.test': [],
    });
  });

  it('a reload that gives a server mirror slots keeps its old routes in the tables pushed before it', () => {
    const mirrored = (filters: Record<string, unknown>[]) => [
      gatewayClass(),
      gateway([listener('http')]),
      route('r', { hostnames: ['app.test', 'shared.test'] }),
      route('m', {
        hostnames: ['app.test'],
        rules: [
          {
            matches: [{ path: { type: 'PathPrefix', value: '/m' } }],
            filters,
            backendRefs: [{ name: 'web', port: 80 }],
          },
        ],
      }),
    ];
    const tablesOf = (objects: Record<string, unknown>[]) =>
      new DynamicSplit().split(buildModel(snapshot([...web], objects), options).model).tables;
    const mirror = { type: 'RequestMirror', requestMirror: { backendRef: { name: 'web', port: 80 } } };
    const before = tablesOf(mirrored([]));
    const after = tablesOf(mirrored([mirror]));
    const union = tablesForReload(after, before);
    const server = (t: typeof before, key: string) => t.routes.servers.find((s) => s.key === key);
    expect(server(union, '80/app.test')).toEqual(server(before, '80/app.test'));
    expect(server(union, '80/shared.test')).toEqual(server(after, '80/shared.test'));
    expect(union.routes.version).not.toBe(after.routes.version);
    // losing a mirror needs no slot: the new routes go at once
    expect(tablesForReload(before, after).routes).toBe(before.routes);
  });

  it('a reload pushes the union of old and new route servers', () => {
    const before = new DynamicSplit().split(buildModel(snapshot([...web], gw), options).model).tables;
    const moved = [gatewayClass(), gateway([listener('http')]), route('r', { hostnames: ['new.test'] })];
    const after = new DynamicSplit().split(buildModel(snapshot([...web], moved), options).model).tables;
    const union = tablesForReload(after, before);
    expect(union.routes.servers.map((s) => s.key).sort()).toEqual(
      ['80/app.test', '80/new.test', '80/shared.test', '8081/app.test', '8081/shared.test'].sort(),
    );
    expect(union.routes.version).not.toBe(after.routes.version);
  });
});

describe('listeners of different Gateways on one address, port and hostname', () => {
  type Obj = Record<string, unknown>;
  /** tenant is Gateway `<ns>/gw` created at minute `minute` with `listeners`, and its route `<ns>/r` to its own web */
  const tenant = (ns: string, minute: number, listeners: Obj[], hostnames?: string[], extra: Obj = {}): Obj[] => {
    const g = gateway(listeners, 'gw', ns, extra);
    const created = `2026-01-01T00:${String(minute).padStart(2, '0')}:00Z`;
    return [
      { ...g, metadata: { ...(g.metadata as Obj), creationTimestamp: created } },
      route('r', { namespace: ns, parentRefs: [{ name: 'gw', namespace: ns }], ...(hostnames ? { hostnames } : {}) }),
    ];
  };
  const shared = listener('http', { hostname: 'shared.test' });
  /** summary: each server key with the routes it serves, and each listener that is Conflicted (with its reason) */
  const summary = (objects: Obj[], o: BuildOptions = options) => {
    const result = buildModel(snapshot([], [gatewayClass(), ...objects]), o);
    const servers = (result.model.gateway?.routes.servers ?? []).map(
      (s) => `${s.key}: ${[...new Set(s.routes.map((r) => r.route.split('#')[0]))].join(' ')}`,
    );
    const conflicted = (result.gateway?.status.gateways ?? []).flatMap((g) =>
      g.listeners.flatMap((l) => {
        const c = l.conditions.find((x) => x.type === 'Conflicted' && x.status === 'True');
        const p = l.conditions.find((x) => x.type === 'Programmed');
        return c ? [`${g.namespace}/${g.name}/${l.name} ${c.reason} Programmed=${p?.status}`] : [];
      }),
    );
    return { servers, conflicted, result };
  };

  it.each([
    {
      name: 'the same hostname on port 80: the older Gateway keeps it, the newer listener is Conflicted',
      objects: [...tenant('victim', 1, [shared]), ...tenant('thief', 2, [shared])],
      servers: ['80/shared.test: victim/r'],
      conflicted: ['thief/gw/http HostnameConflict Programmed=False'],
    },
    {
      name: 'age decides, not the names',
      objects: [...tenant('victim', 2, [shared]), ...tenant('thief', 1, [shared])],
      servers: ['80/shared.test: thief/r'],
      conflicted: ['victim/gw/http HostnameConflict Programmed=False'],
    },
    {
      name: 'both without hostname: the older keeps the catch-all',
      objects: [...tenant('a', 1, [listener('http')]), ...tenant('b', 2, [listener('http')])],
      servers: ['80/_: a/r'],
      conflicted: ['b/gw/http HostnameConflict Programmed=False'],
    },
    {
      name: 'the same wildcard: the older keeps it',
      objects: [
        ...tenant('a', 1, [listener('http', { hostname: '*.shared.test' })]),
        ...tenant('b', 2, [listener('http', { hostname: '*.shared.test' })]),
      ],
      servers: ['80/*.shared.test: a/r'],
      conflicted: ['b/gw/http HostnameConflict Programmed=False'],
    },
    {
      name: 'port 8080 written out is nginx’s port for 80 with --http-port 8080: the same server, a conflict',
      objects: [...tenant('a', 1, [shared]), ...tenant('b', 2, [{ ...shared, port: 8080 }])],
      http: 8080,
      servers: ['8080/shared.test: a/r'],
      conflicted: ['b/gw/http HostnameConflict Programmed=False'],
    },
    {
      name: 'two listeners of one Gateway that --http-port 8080 makes one server: the second is Conflicted',
      objects: [...tenant('a', 1, [shared, { ...shared, name: 'alt', port: 8080 }])],
      http: 8080,
      servers: ['8080/shared.test: a/r'],
      conflicted: ['a/gw/alt HostnameConflict Programmed=False'],
    },
    {
      name: 'other hostnames or other ports: no conflict',
      objects: [
        ...tenant('a', 1, [shared]),
        ...tenant('b', 2, [listener('http', { hostname: 'other.test' }), { ...shared, name: 'alt', port: 8081 }]),
      ],
      servers: ['80/other.test: b/r', '80/shared.test: a/r', '8081/shared.test: b/r'],
      conflicted: [],
    },
    {
      name: 'a broader listener of a newer Gateway gives way to the exact one (the spec’s precedence), no conflict',
      objects: [...tenant('victim', 1, [shared]), ...tenant('thief', 2, [listener('http')], ['shared.test'])],
      servers: ['80/shared.test: victim/r'],
      conflicted: [],
    },
    {
      name: 'and so does a broader listener of an older one',
      objects: [...tenant('a', 1, [listener('http')], ['shared.test']), ...tenant('b', 2, [shared])],
      servers: ['80/shared.test: b/r'],
      conflicted: [],
    },
    {
      name: 'another protocol on a port an older Gateway serves: ProtocolConflict, whatever the names',
      objects: [
        ...tenant('z-victim', 1, [{ ...shared, port: 8443, protocol: 'HTTPS', tls: { certificateRefs: [] } }]),
        ...tenant('a-thief', 2, [{ ...shared, port: 8443 }]),
      ],
      servers: [],
      conflicted: ['a-thief/gw/http ProtocolConflict Programmed=False'],
    },
    {
      name: 'HTTPS on nginx’s http port: ProtocolConflict (nginx serves it as HTTP)',
      objects: [
        ...tenant('a', 1, [{ ...shared, protocol: 'HTTPS', tls: { certificateRefs: [{ name: 'x' }] } }]),
        ...tenant('b', 2, [listener('http', { hostname: 'b.test' })]),
      ],
      servers: ['80/b.test: b/r'],
      conflicted: ['a/gw/http ProtocolConflict Programmed=False'],
    },
  ])('$name', ({ objects, servers, conflicted, http }) => {
    const got = summary(objects, http ? { ...options, httpPort: http } : options);
    expect(got.servers).toEqual(servers);
    expect(got.conflicted).toEqual(conflicted);
  });

  it('a route attached only to a Conflicted listener is not accepted; the Gateway is not Programmed', () => {
    const { result } = summary([...tenant('victim', 1, [shared]), ...tenant('thief', 2, [shared])]);
    const thief = result.gateway?.status.httpRoutes.find((r) => r.namespace === 'thief');
    expect(thief?.parents[0]?.conditions[0]).toMatchObject({
      type: 'Accepted',
      status: 'False',
      reason: 'NoMatchingParent',
      message: 'every listener matching sectionName and port is Conflicted (see the Gateway’s listener status)',
    });
    const gw = result.gateway?.status.gateways.find((g) => g.namespace === 'thief');
    expect(gw?.conditions.find((c) => c.type === 'Programmed')?.status).toBe('False');
    expect(gw?.listeners[0]?.attachedRoutes).toBe(0);
    // the other tenant's Gateway is not named to this one
    const conflicted = gw?.listeners[0]?.conditions.find((c) => c.type === 'Conflicted');
    expect(conflicted?.message).toBe(
      'a Gateway of another namespace, which is older, has a listener on port 80 with hostname shared.test on the same address, and keeps it',
    );
  });

  it('on their own addresses (--gateway-addresses) the same hostname is no conflict', () => {
    const pool = { ...options, gateway: { controllerName: CONTROLLER, addresses: ['10.0.0.1', '10.0.0.2'] } };
    const got = summary([...tenant('a', 1, [shared]), ...tenant('b', 2, [shared])], pool);
    expect(got.servers).toEqual([
      '10.0.0.1:80/_: ',
      '10.0.0.1:80/shared.test: a/r',
      '10.0.0.2:80/_: ',
      '10.0.0.2:80/shared.test: b/r',
    ]);
    expect(got.conflicted).toEqual([]);
  });
});
