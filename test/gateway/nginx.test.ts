/**
 * The Gateway API in the build: RequestMirror and timeouts read as the spec says, buildModel's `gateway` result and
 * servers, the routes table, the Ingress-vs-HTTPRoute host rule, and the GatewayClass without Lua.
 */
import { describe, expect, it } from 'vitest';
import { buildModel, defaultBuildOptions, type BuildOptions } from '../../src/model/build.js';
import { servedNames, DynamicSplit, tablesForReload } from '../../src/model/dynamic-tables.js';
import { buildGatewayRoutes, checkDuration, readHTTPRoute } from '../../src/model/gateway/index.js';
import type { Snapshot } from '../../src/model/snapshot.js';
import { issueCertificate } from '../../src/tls/issue.js';
import { ingress, ingressClass, serviceWithEndpoints, snapshotOf, tlsSecret } from '../support/manifests.js';
import { CONTROLLER, gateway, gatewayClass, grant, input, listener, route, service } from './fixtures.js';

const LUA = { modules: [], packagePath: '/lua/?.lua;;', controlSocket: '/run/ia/control.sock', requestMetrics: false };
const options: BuildOptions = { ...defaultBuildOptions, dynamic: LUA, gateway: { controllerName: CONTROLLER } };

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
