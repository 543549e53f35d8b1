/**
 * Issue 20, `convert`: the converted routes, served by this controller, answer the same requests as the Ingresses
 * did. One set of Ingresses (paths, rewrite-target, use-regex, x-forwarded-prefix, upstream-vhost, redirects,
 * app-root, canary-by-header, TLS with its HTTPS redirect) goes to the test API server with real loopback backends
 * and the real controller and nginx; a table of requests records status, backend, the path and Host the backend saw,
 * X-Forwarded-Prefix and Location. Then the objects `convert` makes of the same manifests go to a fresh cluster with
 * the Gateway API on, and the same requests must get the same answers, but for the differences convert reports on
 * stderr (listed per request below, and checked to be reported) and the HTTPS redirect's port, which only differs
 * because the test listens on other ports than 80 and 443.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayApiCrds } from '../../src/dev/api-server/gateway-api.js';
import { convertIngresses, defaultConvertOptions, unexpressedLine } from '../../src/convert/convert.js';
import { buildGatewayRoutes } from '../../src/model/gateway/index.js';
import type { KubeObject, Service } from '../../src/model/snapshot.js';
import { issueCertificate } from '../../src/tls/issue.js';
import { nginxSettled, startCluster, waitFor, type Cluster } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints, snapshotOf, tlsSecret } from '../support/manifests.js';
import { get, startBackend, type Backend, type Reply } from '../support/net.js';

/** Answer is what the comparison looks at in a reply. */
interface Answer {
  readonly status: number;
  readonly backend: string | null;
  /** the path (with query) and Host the backend saw */
  readonly path: string | null;
  readonly host: string | null;
  readonly forwardedPrefix: string | null;
  readonly location: string | null;
}

/**
 * Case is one request, what the Ingress answers (checked now), and, for a difference convert reports, what the
 * converted routes answer instead with the stderr line that says so.
 */
interface Case {
  readonly name: string;
  readonly host: string;
  readonly path: string;
  readonly https?: boolean;
  readonly headers?: Record<string, string>;
  readonly ingress: Partial<Answer>;
  readonly gateway?: { readonly differs: Partial<Answer>; readonly reported?: RegExp };
}

const CASES: readonly Case[] = [
  { name: 'Prefix /', host: 'app.example.com', path: '/anything', ingress: { status: 200, backend: 'stable' } },
  { name: 'Exact path', host: 'app.example.com', path: '/health', ingress: { status: 200, backend: 'api' } },
  {
    name: 'Exact is not a prefix',
    host: 'app.example.com',
    path: '/health/deep',
    ingress: { status: 200, backend: 'stable', path: '/health/deep' },
  },
  {
    name: 'Prefix is element-wise',
    host: 'app.example.com',
    path: '/apiary',
    ingress: { status: 200, backend: 'stable' },
  },
  { name: 'Prefix element', host: 'app.example.com', path: '/docs/a', ingress: { status: 200, backend: 'api' } },
  {
    name: 'canary-by-header always',
    host: 'app.example.com',
    path: '/',
    headers: { 'X-Canary': 'always' },
    ingress: { status: 200, backend: 'next' },
  },
  {
    name: 'canary-by-header never',
    host: 'app.example.com',
    path: '/',
    headers: { 'X-Canary': 'never' },
    ingress: { status: 200, backend: 'stable' },
  },
  {
    name: 'canary-by-header other value',
    host: 'app.example.com',
    path: '/',
    headers: { 'X-Canary': 'maybe' },
    ingress: { status: 200, backend: 'stable' },
  },
  {
    name: 'rewrite-target /$2 strips the prefix',
    host: 'strip.example.com',
    path: '/api/items?x=1',
    ingress: { status: 200, backend: 'api', path: '/items?x=1' },
  },
  {
    name: 'rewrite-target /$2 on the bare prefix',
    host: 'strip.example.com',
    path: '/api',
    ingress: { status: 200, backend: 'api', path: '/' },
  },
  {
    name: 'rewrite-target without captures',
    host: 'full.example.com',
    path: '/old/page',
    ingress: { status: 200, backend: 'api', path: '/index' },
  },
  {
    name: 'x-forwarded-prefix and upstream-vhost',
    host: 'tuned.example.com',
    path: '/shop/cart',
    ingress: { status: 200, backend: 'api', host: 'internal.example.com', forwardedPrefix: '/shop' },
  },
  {
    name: 'use-regex path',
    host: 'regex.example.com',
    path: '/items/42',
    ingress: { status: 200, backend: 'api', path: '/items/42' },
  },
  {
    name: 'use-regex anchored at the end',
    host: 'regex.example.com',
    path: '/items/42/more',
    ingress: { status: 404, backend: null },
  },
  {
    name: 'use-regex is case-insensitive in nginx',
    host: 'regex.example.com',
    path: '/ITEMS/42',
    ingress: { status: 200, backend: 'api' },
    gateway: { differs: { status: 404, backend: null, path: null, host: null }, reported: /case-insensitively/ },
  },
  {
    name: 'permanent-redirect',
    host: 'old.example.com',
    path: '/some/where',
    ingress: { status: 301, backend: null, location: 'https://new.example.com:8443/landing' },
  },
  {
    name: 'app-root',
    host: 'rooted.example.com',
    path: '/',
    ingress: { status: 302, backend: null, location: 'http://rooted.example.com/app' },
  },
  {
    name: 'app-root leaves other paths alone',
    host: 'rooted.example.com',
    path: '/app',
    ingress: { status: 200, backend: 'stable', path: '/app' },
  },
  {
    name: 'ssl-redirect on a TLS host',
    host: 'secure.example.com',
    path: '/login',
    // ingress-nginx names --https-port in the redirect when it is not 443; Gateway API's redirect without a port
    // uses https's well-known one. Deployed on 80 and 443, as the Service maps them, both say the same.
    ingress: { status: 308, backend: null, location: 'https://secure.example.com:{https-port}/login' },
    gateway: { differs: { location: 'https://secure.example.com/login' } },
  },
  {
    name: 'ssl-redirect drops a trailing slash',
    host: 'secure.example.com',
    path: '/dir/',
    ingress: { status: 308, backend: null, location: 'https://secure.example.com:{https-port}/dir' },
    gateway: { differs: { location: 'https://secure.example.com/dir/' }, reported: /drops a trailing `\/`/ },
  },
  {
    name: 'HTTPS on a TLS host',
    host: 'secure.example.com',
    path: '/login',
    https: true,
    ingress: { status: 200, backend: 'stable', path: '/login' },
  },
  {
    name: 'canary-weight 100 takes every request',
    host: 'weighted.example.com',
    path: '/',
    ingress: { status: 200, backend: 'next' },
  },
  {
    name: 'defaultBackend answers the paths of its host no rule has',
    host: 'docs.example.com',
    path: '/elsewhere',
    ingress: { status: 200, backend: 'stable', path: '/elsewhere' },
  },
  {
    name: 'a rule beside defaultBackend',
    host: 'docs.example.com',
    path: '/guide/1',
    ingress: { status: 200, backend: 'api' },
  },
  { name: 'unknown host', host: 'nowhere.example.com', path: '/', ingress: { status: 404, backend: null } },
];

const annotated = (annotations: Record<string, string>) => ({ annotations });
const withDefaultBackend = (i: ReturnType<typeof ingress>, service: string) => ({
  ...i,
  spec: { ...i.spec, defaultBackend: { service: { name: service, port: { number: 80 } } } },
});

/** manifests are the Ingresses and what they name, for the backends' ports. */
async function manifests(ports: Record<string, number>): Promise<object[]> {
  const cert = await issueCertificate({ commonName: 'secure.example.com', dnsNames: ['secure.example.com'] });
  return [
    ingressClass(),
    ...Object.entries(ports).flatMap(([name, port]) => serviceWithEndpoints(name, [{ port }])),
    tlsSecret('secure-tls', cert.certPem, cert.keyPem),
    ingress('app', {
      'app.example.com': [
        { path: '/', service: 'stable' },
        { path: '/health', pathType: 'Exact', service: 'api' },
        { path: '/api', service: 'api' },
        { path: '/docs/', service: 'api' },
      ],
    }),
    ingress(
      'app-canary',
      { 'app.example.com': [{ path: '/', service: 'next' }] },
      annotated({
        'nginx.ingress.kubernetes.io/canary': 'true',
        'nginx.ingress.kubernetes.io/canary-by-header': 'X-Canary',
      }),
    ),
    ingress('weighted', { 'weighted.example.com': [{ path: '/', service: 'stable' }] }),
    ingress(
      'weighted-canary',
      { 'weighted.example.com': [{ path: '/', service: 'next' }] },
      annotated({ 'nginx.ingress.kubernetes.io/canary': 'true', 'nginx.ingress.kubernetes.io/canary-weight': '100' }),
    ),
    withDefaultBackend(ingress('docs', { 'docs.example.com': [{ path: '/guide', service: 'api' }] }), 'stable'),
    ingress(
      'strip',
      { 'strip.example.com': [{ path: '/api(/|$)(.*)', pathType: 'ImplementationSpecific', service: 'api' }] },
      annotated({
        'nginx.ingress.kubernetes.io/rewrite-target': '/$2',
        'nginx.ingress.kubernetes.io/use-regex': 'true',
      }),
    ),
    ingress(
      'full',
      { 'full.example.com': [{ path: '/old', service: 'api' }] },
      annotated({ 'nginx.ingress.kubernetes.io/rewrite-target': '/index' }),
    ),
    ingress(
      'tuned',
      { 'tuned.example.com': [{ path: '/shop', service: 'api' }] },
      annotated({
        'nginx.ingress.kubernetes.io/x-forwarded-prefix': '/shop',
        'nginx.ingress.kubernetes.io/upstream-vhost': 'internal.example.com',
      }),
    ),
    ingress(
      'regex',
      { 'regex.example.com': [{ path: '/items/[0-9]+$', pathType: 'ImplementationSpecific', service: 'api' }] },
      annotated({ 'nginx.ingress.kubernetes.io/use-regex': 'true' }),
    ),
    ingress(
      'moved',
      { 'old.example.com': [{ path: '/', service: 'stable' }] },
      annotated({ 'nginx.ingress.kubernetes.io/permanent-redirect': 'https://new.example.com:8443/landing' }),
    ),
    ingress(
      'rooted',
      { 'rooted.example.com': [{ path: '/', service: 'stable' }] },
      annotated({ 'nginx.ingress.kubernetes.io/app-root': '/app' }),
    ),
    ingress(
      'secure',
      { 'secure.example.com': [{ path: '/', service: 'stable' }] },
      { tls: [{ hosts: ['secure.example.com'], secretName: 'secure-tls' }] },
    ),
  ];
}

const backends: Backend[] = [];
let seed: object[] = [];
const ingressAnswers = new Map<string, Answer>();

async function ask(cluster: Cluster, c: Case): Promise<Answer> {
  const reply: Reply = await get({
    host: c.host,
    path: c.path,
    port: c.https ? cluster.httpsPort : cluster.httpPort,
    ...(c.https ? { https: true } : {}),
    ...(c.headers ? { headers: c.headers } : {}),
  });
  const seen = reply.backend
    ? (JSON.parse(reply.body) as { path: string; host: string; headers: Record<string, string> })
    : null;
  return {
    status: reply.status,
    backend: reply.backend ?? null,
    path: seen?.path ?? null,
    host: seen?.host ?? null,
    forwardedPrefix: seen?.headers['x-forwarded-prefix'] ?? null,
    location: typeof reply.headers.location === 'string' ? reply.headers.location : null,
  };
}

beforeAll(async () => {
  for (const name of ['stable', 'next', 'api']) backends.push(await startBackend(name));
  seed = await manifests(Object.fromEntries(backends.map((b) => [b.name, b.port])));
}, 30_000);

afterAll(async () => {
  await Promise.all(backends.map((b) => b.close()));
});

describe('the Ingresses, served by the controller', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await startCluster(seed);
    await waitFor('the first sync', () => (cluster.actor('nginx')?.context.reloadsOk as number) >= 1, 15_000);
  }, 30_000);
  afterAll(() => cluster?.close());

  it.each(CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const answer = await ask(cluster, c);
    const location = c.ingress.location?.replace('{https-port}', String(cluster.httpsPort));
    expect(answer).toMatchObject({ ...c.ingress, ...(location === undefined ? {} : { location }) });
    ingressAnswers.set(c.name, answer);
  });
});

describe('the converted objects, as the Gateway API core reads them', () => {
  it('report each difference the table expects, and every route is accepted with its backends resolved', () => {
    const converted = convertIngresses(snapshotOf(seed as { kind?: string }[]));
    const stderr = converted.unexpressed.map(unexpressedLine);
    for (const c of CASES) {
      const reported = c.gateway?.reported;
      if (reported)
        expect(
          stderr.some((line) => reported.test(line)),
          `${c.name}: ${stderr.join('\n')}`,
        ).toBe(true);
    }
    const of = (kind: string) => converted.objects.filter((o) => o.kind === kind);
    const built = buildGatewayRoutes({
      controllerName: defaultConvertOptions.controllerName,
      gatewayClasses: of('GatewayClass'),
      gateways: of('Gateway'),
      httpRoutes: of('HTTPRoute'),
      referenceGrants: of('ReferenceGrant'),
      services: seed.filter((o) => (o as { kind: string }).kind === 'Service') as Service[],
      secrets: seed.filter((o) => (o as { kind: string }).kind === 'Secret') as KubeObject[],
      namespaces: [],
    });
    expect(built.status.httpRoutes.length).toBe(of('HTTPRoute').length);
    for (const route of built.status.httpRoutes)
      for (const parent of route.parents)
        for (const condition of parent.conditions)
          expect(condition.status, `${route.name} ${condition.type} ${condition.message}`).toBe('True');
  });
});

describe('the converted objects, served by the controller with the Gateway API', () => {
  let cluster: Cluster;
  let stderr: string[] = [];

  beforeAll(async () => {
    // The seed is made in the file's beforeAll, so the conversion runs here, not when the describe is collected.
    const converted = convertIngresses(snapshotOf(seed as { kind?: string }[]));
    stderr = converted.unexpressed.map(unexpressedLine);
    // Everything but the Ingresses: the Services, slices and Secrets stay, the routes take the Ingresses' place.
    const rest = seed.filter((o) => !['Ingress', 'IngressClass'].includes((o as { kind: string }).kind));
    cluster = await startCluster([...gatewayApiCrds(), ...rest, ...converted.objects]);
    await waitFor('the first sync', () => (cluster.actor('nginx')?.context.reloadsOk as number) >= 1, 15_000);
    // The first sync may come before the Gateway watchers have listed: wait until the first route answers.
    await waitFor('the routes served', async () => (await ask(cluster, CASES[0]!)).status === 200, 15_000);
    // New workers answer before the old ones have closed their listeners: wait for the reload to be confirmed.
    await waitFor('nginx settled', () => nginxSettled(cluster.actor('nginx')), 10_000);
  }, 30_000);
  afterAll(() => cluster?.close());

  it.each(CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const before = ingressAnswers.get(c.name);
    expect(before, 'the Ingress half ran first').toBeDefined();
    const answer = await ask(cluster, c);
    expect(answer).toEqual({ ...before, ...c.gateway?.differs });
    const reported = c.gateway?.reported;
    if (reported)
      expect(
        stderr.some((line) => reported.test(line)),
        stderr.join('\n'),
      ).toBe(true);
  });
});
