/**
 * Issue 18, the status page: /status.json's report is a pure function of the actors' snapshots
 * (src/http/status-report.ts), and who may read it a pure decision (src/http/status-page.ts). Snapshots here are
 * plain objects in the shapes the actors hold, with models built by the real buildModel.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { statusAccess, type StatusPageMode } from '../../src/http/status-page.js';
import { buildStatusReport, type StatusInput } from '../../src/http/status-report.js';
import { gatewayRoutesOf } from '../../src/http/status-gateway.js';
import type { GatewayStatus } from '../../src/model/gateway/routes.js';
import type { Health } from '../../src/http/health.js';
import type { PushedTables } from '../../machines/events.js';
import type { ApplyRecord } from '../../machines/applies.js';
import { join } from 'node:path';
import { loadManifests } from '../../src/manifests/load.js';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions, type BuildOptions } from '../../src/model/build-types.js';
import { DynamicSplit } from '../../src/sync/dynamic-split.js';
import type { NginxModel, Problem } from '../../src/model/nginx-model.js';
import { issueCertificate } from '../../src/tls/issue.js';
import { ingress, ingressClass, serviceWithEndpoints, snapshotOf, tlsSecret } from '../support/manifests.js';
import {
  nginxSnapshot,
  observedActors,
  statusSnapshot,
  templateSnapshot,
  type Snapshots,
} from '../support/observed.js';

const FIXTURES = new URL('../fixtures/', import.meta.url).pathname;
const NOW = Date.parse('2026-01-01T00:00:00Z');
const info = {
  version: '0.1.0',
  ingressClass: 'nginx',
  controllerClass: 'k8s.io/ingress-nginx',
  identity: 'pod-a',
  startedAt: NOW - 3_723_000,
};
const healthy: Health = { ok: true, problems: [], warnings: [] };
const ACTORS = ['http', 'watcher.Ingress', 'template', 'syncQueue', 'nginx', 'status'];

const input = (actors: Snapshots, health: Health = healthy): StatusInput => ({
  actors: observedActors(actors),
  actorIds: ACTORS,
  info,
  health,
  now: NOW,
});

let model: NginxModel;
let problems: readonly Problem[];
let notAfter: string;

beforeAll(async () => {
  const pair = await issueCertificate({ commonName: 'secure.example.com', dnsNames: ['secure.example.com'], days: 30 });
  const { X509Certificate } = await import('node:crypto');
  notAfter = new Date(new X509Certificate(pair.certPem).validTo).toISOString();
  const built = buildModel(
    snapshotOf([
      ingressClass(),
      ...serviceWithEndpoints('web', [{ port: 8081 }, { port: 8082 }]),
      ...serviceWithEndpoints('next', [{ port: 8083 }]),
      tlsSecret('secure-tls', pair.certPem, pair.keyPem),
      ingress('web', {
        'web.example.com': [
          { path: '/', service: 'web' },
          { path: '/gone', service: 'missing' },
        ],
      }),
      ingress(
        'web-canary',
        { 'web.example.com': [{ path: '/', service: 'next' }] },
        {
          annotations: {
            'nginx.ingress.kubernetes.io/canary': 'true',
            'nginx.ingress.kubernetes.io/canary-weight': '10',
          },
        },
      ),
      ingress(
        'secure',
        { 'secure.example.com': [{ path: '/app', pathType: 'Exact', service: 'web' }] },
        { tls: [{ hosts: ['secure.example.com'], secretName: 'secure-tls' }] },
      ),
      ingress(
        'bad',
        { 'bad.example.com': [{ path: '/', service: 'web' }] },
        {
          annotations: { 'nginx.ingress.kubernetes.io/proxy-body-size': '<img src=x onerror=alert(1)>' },
        },
      ),
    ]),
    defaultBuildOptions,
  );
  model = built.model;
  problems = built.problems;
}, 30_000);

describe('buildStatusReport', () => {
  it('before the first sync: no routes, certificates or problems, every actor listed, absent ones said so', () => {
    const report = buildStatusReport(
      input({
        root: { value: 'booting', status: 'active' },
        nginx: nginxSnapshot({ alive: 'starting' }),
        template: templateSnapshot('idle', { model: null }),
      }),
    );
    expect(report.schema).toBe(1);
    expect(report.generatedAt).toBe('2026-01-01T00:00:00.000Z');
    expect(report.controller).toEqual({
      ...info,
      startedAt: '2025-12-31T22:57:57.000Z',
      uptimeSeconds: 3723,
      role: 'unknown',
      healthy: true,
      healthProblems: [],
      healthWarnings: [],
    });
    expect([report.routes, report.streams, report.certificates, report.problems]).toEqual([null, null, null, null]);
    expect(report.actors).toEqual([
      { id: 'root', state: 'booting', status: 'active' },
      { id: 'http', state: 'absent', status: 'absent' },
      { id: 'watcher.Ingress', state: 'absent', status: 'absent' },
      { id: 'template', state: 'idle', status: 'active' },
      { id: 'syncQueue', state: 'absent', status: 'absent' },
      { id: 'nginx', state: 'alive.starting', status: 'active' },
      { id: 'status', state: 'absent', status: 'absent' },
    ]);
    expect(report.nginx).toMatchObject({ state: 'alive.starting', pid: null, reloadsOk: 0, recent: [] });
  });

  it('says where each host is served from with routes as data: the shared server, or its own and why', () => {
    const lua = { modules: [], packagePath: '/lua/?.lua', controlSocket: '/run/ia.sock', requestMetrics: false };
    const shared = { ...model, lua: { ...lua, routesAsData: true } };
    const report = buildStatusReport(input({ template: templateSnapshot('idle', { model: shared }) }));
    expect(Object.fromEntries((report.routes ?? []).map((r) => [r.host, r.servedFrom]))).toEqual({
      'bad.example.com': 'shared server',
      'secure.example.com': 'shared server',
      'web.example.com': 'own server: canary',
    });
  });

  it('lists each host and path once with its backend, endpoints, canary and answer', () => {
    const report = buildStatusReport(input({ template: templateSnapshot('idle', { model }) }));
    expect(report.routes).toEqual([
      {
        host: 'bad.example.com',
        path: '/',
        pathType: 'Prefix',
        ingress: 'default/bad', // an invalid annotation of no security weight is only ignored, as ingress-nginx does
        backend: 'default/web:80',
        endpoints: 2,
        canary: null,
        answer: 'proxy',
        tls: false,
        servedFrom: 'own server',
      },
      {
        host: 'secure.example.com',
        path: '/app',
        pathType: 'Exact',
        ingress: 'default/secure',
        backend: 'default/web:80',
        endpoints: 2,
        canary: null,
        answer: 'proxy',
        tls: true,
        servedFrom: 'own server',
      },
      {
        host: 'web.example.com',
        path: '/',
        pathType: 'Prefix',
        ingress: 'default/web',
        backend: 'default/web:80',
        endpoints: 2,
        canary: { backend: 'default/next:80', endpoints: 1 },
        answer: 'proxy',
        tls: false,
        servedFrom: 'own server',
      },
      {
        host: 'web.example.com',
        path: '/gone',
        pathType: 'Prefix',
        ingress: 'default/web',
        backend: null,
        endpoints: null,
        canary: null,
        answer: '503',
        tls: false,
        servedFrom: 'own server',
      },
    ]);
  });

  const certificateCases: [string, () => { model: NginxModel; tables: PushedTables | null }][] = [
    ['rendered into nginx.conf: from the model’s files', () => ({ model, tables: null })],
    [
      'with the Lua balancer: from the table pushed to nginx',
      () => {
        const split = new DynamicSplit().split(model);
        return { model: split.model, tables: split.tables };
      },
    ],
  ];
  it.each(certificateCases)('gives each TLS host its Secret and expiry, %s', (_, make) => {
    const { model: m, tables } = make();
    const report = buildStatusReport(
      input({ template: templateSnapshot('idle', { model: m }), nginx: nginxSnapshot({}, { tables }) }),
    );
    expect(report.certificates).toEqual([
      { host: '*', secret: null, notAfter: null, daysLeft: null },
      {
        host: 'secure.example.com',
        secret: 'default/secure-tls',
        notAfter,
        daysLeft: Math.floor((Date.parse(notAfter) - NOW) / 86_400_000),
      },
    ]);
  });

  it.each([
    [
      'stream-tcp-udp-services',
      {
        tcpServicesConfigMap: 'ingress/tcp-services',
        udpServicesConfigMap: 'ingress/udp-services',
        reservedPorts: [10254],
      },
      [
        { protocol: 'TCP', listen: '9000', source: 'ingress/tcp-services 9000', service: 'default/echo', endpoints: 2 },
        { protocol: 'TCP', listen: '9001', source: 'ingress/tcp-services 9001', service: 'default/echo', endpoints: 2 },
        { protocol: 'TCP', listen: '9002', source: 'ingress/tcp-services 9002', service: 'default/echo', endpoints: 2 },
        {
          protocol: 'TCP',
          listen: '9011',
          source: 'ingress/tcp-services 9011',
          service: 'default/kube-dns',
          endpoints: 1,
        },
        { protocol: 'UDP', listen: '5353', source: 'ingress/udp-services 5353', service: 'default/dns', endpoints: 1 },
        { protocol: 'UDP', listen: '5354', source: 'ingress/udp-services 5354', service: 'default/dns', endpoints: 1 },
        {
          protocol: 'UDP',
          listen: '5356',
          source: 'ingress/udp-services 5356',
          service: 'default/kube-dns',
          endpoints: 1,
        },
      ],
    ],
    [
      'ssl-passthrough-argocd',
      { enableSslPassthrough: true, stream: { modules: [], socketDir: '/tmp' } },
      [
        {
          protocol: 'TLS passthrough',
          listen: '443',
          source: 'argocd.example.com',
          service: 'argocd/argocd-server',
          endpoints: 1,
        },
        {
          protocol: 'TLS passthrough',
          listen: '443',
          source: '*.apps.example.com',
          service: 'default/web',
          endpoints: 1,
        },
      ],
    ],
    ['configmap-log-format-upstream', {}, []],
  ])(
    'lists the stream block of the %s fixture: TCP and UDP services, passthrough hosts',
    async (name, options, streams) => {
      const snapshot = await loadManifests([join(FIXTURES, name, 'input.yaml')]);
      const { model: m } = buildModel(snapshot, { ...defaultBuildOptions, ...options } as BuildOptions);
      expect(buildStatusReport(input({ template: templateSnapshot('ready', { model: m }) })).streams).toEqual(streams);
    },
  );

  it('gives the problems with their object, field and one-line text, attacker strings as they are', () => {
    const report = buildStatusReport(input({ status: statusSnapshot({ follower: 'campaigning' }, { problems }) }));
    expect(report.problems).toContainEqual({
      kind: 'Ingress',
      namespace: 'default',
      name: 'bad',
      field: 'metadata.annotations.nginx.ingress.kubernetes.io/proxy-body-size',
      message: expect.stringContaining('<img src=x onerror=alert(1)>'),
      text: expect.stringMatching(
        /^default\/bad: metadata\.annotations\.nginx\.ingress\.kubernetes\.io\/proxy-body-size: /,
      ),
    });
  });

  it.each([
    [{ follower: 'campaigning' }, 'active', 'follower'],
    [{ leader: { lease: 'held', status: 'idle', events: 'idle' } }, 'active', 'leader'],
    ['stopped', 'done', 'unknown'],
  ])('the status actor in %j (%s) makes the replica %s', (value, status, role) => {
    expect(buildStatusReport(input({ status: { ...statusSnapshot(value), status } })).controller.role).toBe(role);
  });

  it('gives the nginx actor’s counters, an empty error as none, and its recent applies newest first', () => {
    const recent: ApplyRecord[] = [
      { kind: 'reload', trigger: 'k8s.changed Ingress default/web', at: NOW - 2000, durationMs: 41.5, ok: true },
      {
        kind: 'push',
        trigger: 'k8s.changed EndpointSlice default/web-1',
        at: NOW - 1000,
        durationMs: 3,
        ok: false,
        error: 'refused',
      },
    ];
    const nginx = nginxSnapshot(
      { alive: 'running' },
      { pid: 42, reloadsOk: 3, pushesOk: 5, lastReloadError: '', recent },
    );
    expect(buildStatusReport(input({ nginx })).nginx).toEqual({
      state: 'alive.running',
      pid: 42,
      restarts: 0,
      reloadsOk: 3,
      reloadsFailed: 0,
      reloadsSkipped: 0,
      pushesOk: 5,
      pushesFailed: 0,
      lastReloadError: null,
      lastPushError: null,
      recent: [
        {
          kind: 'push',
          trigger: 'k8s.changed EndpointSlice default/web-1',
          at: NOW - 1000,
          durationMs: 3,
          ok: false,
          error: 'refused',
        },
        { kind: 'reload', trigger: 'k8s.changed Ingress default/web', at: NOW - 2000, durationMs: 41.5, ok: true },
      ],
    });
  });

  it('gives /healthz’s verdict with its details', () => {
    const health: Health = {
      ok: false,
      problems: [{ summary: 'nginx is not running', detailed: 'nginx is not running (state restarting)' }],
      warnings: [{ summary: 'w', detailed: 'w (detail)' }],
    };
    expect(buildStatusReport(input({}, health)).controller).toMatchObject({
      healthy: false,
      healthProblems: ['nginx is not running (state restarting)'],
      healthWarnings: ['w (detail)'],
    });
  });
});

describe('statusAccess: who may read the status page', () => {
  it.each<[StatusPageMode, string | undefined, string | undefined, string]>([
    ['loopback', '127.0.0.1', '127.0.0.1:10254', 'serve'],
    ['loopback', '127.0.0.1', 'localhost:10254', 'serve'],
    ['loopback', '::1', '[::1]:10254', 'serve'],
    ['loopback', '::ffff:127.0.0.1', 'localhost', 'serve'],
    ['loopback', '127.0.0.2', '127.0.0.1:9000', 'serve'], // kubectl port-forward 9000:10254
    ['loopback', '127.0.0.1', undefined, 'serve'], // HTTP/1.0 without Host: not a browser
    ['loopback', '10.0.0.7', '10.0.0.5:10254', 'forbidden'], // another pod, the kubelet's network
    ['loopback', '::ffff:10.0.0.7', 'localhost:10254', 'forbidden'],
    ['loopback', undefined, 'localhost', 'forbidden'],
    ['loopback', '127.0.0.1', 'evil.example.com:10254', 'forbidden'], // DNS rebinding: loopback, a foreign name
    ['loopback', '127.0.0.1', 'localhost.evil.example.com', 'forbidden'],
    ['loopback', '127.0.0.1', '127.0.0.1.nip.io', 'forbidden'],
    ['all', '10.0.0.7', 'ingress.example.com', 'serve'],
    ['off', '127.0.0.1', 'localhost', 'off'],
    ['off', '10.0.0.7', 'x', 'off'],
  ])('%s: a client at %s asking for Host %s: %s', (mode, address, host, verdict) =>
    expect(statusAccess(mode, address, host)).toBe(verdict),
  );
});

describe('gatewayRoutesOf (the Gateway API routes of the report)', () => {
  const parentRef = (name: string, sectionName?: string) => ({
    group: 'gateway.networking.k8s.io',
    kind: 'Gateway',
    namespace: 'default',
    name,
    sectionName,
    port: undefined,
  });
  const condition = (type: string, status: 'True' | 'False', reason: string) => ({
    type,
    status,
    reason,
    message: '',
    observedGeneration: 1,
  });
  const status: GatewayStatus = {
    gatewayClasses: [],
    gateways: [],
    httpRoutes: [
      {
        namespace: 'default',
        name: 'web',
        parents: [
          {
            parentRef: parentRef('edge', 'https'),
            controllerName: 'x',
            conditions: [
              condition('Accepted', 'True', 'Accepted'),
              condition('ResolvedRefs', 'False', 'BackendNotFound'),
            ],
          },
        ],
      },
      { namespace: 'default', name: 'orphan', parents: [] },
    ],
    grpcRoutes: [{ namespace: 'apps', name: 'rpc', parents: [] }],
    tlsRoutes: [{ namespace: 'apps', name: 'vault', parents: [] }],
    tcpRoutes: [
      { namespace: 'apps', name: 'db', parents: [] },
      { namespace: 'apps', name: 'db-newer', parents: [] },
    ],
    udpRoutes: [{ namespace: 'apps', name: 'dns', parents: [] }],
  };
  const entry = (route: string, grpc = false) => ({
    route,
    path: { type: 'PathPrefix' as const, value: '/' },
    ...(grpc ? { grpc: true as const } : {}),
    headers: [],
    queryParams: [],
    filters: [],
    backends: [],
    timeouts: {},
  });
  const withTable = {
    gateway: {
      servers: [],
      proxyHeaders: { host: '$host' },
      routes: {
        version: 'v',
        servers: [
          { key: '80/b.example.com', port: 80, routes: [entry('default/web#0'), entry('default/web#1')] },
          { key: '443/a.example.com', port: 443, routes: [entry('default/web#0')] },
          { key: '80/_', port: 80, routes: [entry('apps/rpc#0', true)] },
        ],
      },
    },
    // the stream block's routes (src/model/gateway/nginx-stream.ts): db-newer lost its port to db
    stream: {
      gateway: {
        served: [
          { kind: 'TLSRoute', route: 'apps/vault', where: 'vault.example.com' },
          { kind: 'TLSRoute', route: 'apps/vault', where: '*.vault.example.com' },
          { kind: 'TCPRoute', route: 'apps/db', where: ':5432' },
          { kind: 'UDPRoute', route: 'apps/dns', where: ':53' },
        ],
      },
    },
  } as unknown as NginxModel;

  it('lists each route by kind and name, with where nginx serves it (hostnames, SNI names, ports) and its parents’ conditions', () => {
    expect(gatewayRoutesOf(status, withTable)).toEqual([
      { kind: 'GRPCRoute', route: 'apps/rpc', hostnames: ['*'], parents: [] },
      { kind: 'HTTPRoute', route: 'default/orphan', hostnames: [], parents: [] },
      {
        kind: 'HTTPRoute',
        route: 'default/web',
        hostnames: ['a.example.com', 'b.example.com'],
        parents: [{ parent: 'default/edge/https', accepted: 'True', resolvedRefs: 'False (BackendNotFound)' }],
      },
      { kind: 'TCPRoute', route: 'apps/db', hostnames: [':5432'], parents: [] },
      { kind: 'TCPRoute', route: 'apps/db-newer', hostnames: [], parents: [] },
      { kind: 'TLSRoute', route: 'apps/vault', hostnames: ['*.vault.example.com', 'vault.example.com'], parents: [] },
      { kind: 'UDPRoute', route: 'apps/dns', hostnames: [':53'], parents: [] },
    ]);
  });

  it('is null before the status actor has a Gateway status (or without the Gateway API)', () => {
    expect(gatewayRoutesOf(null, withTable)).toBeNull();
  });
});
