/**
 * One schema, both sides (src/model/table-schema.ts, lua/ingress_actors/schema.lua): what the model builds from legal
 * objects at the CRDs' bounds, nginx's validate.lua accepts; entries generated at every bound are accepted by both
 * the model's check (src/model/table-check.ts) and the real Lua validator, and one past each bound is refused by both.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildModel } from '../../src/model/build.js';
import type {
  Backend,
  RouteEntry,
  RouteFilterEntry,
  RouteTable,
  ServedCertificate,
} from '../../src/model/pushed-tables.js';
import {
  backendProblem,
  certificateProblem,
  hostProblem,
  routeEntryProblem,
  serverKeyProblem,
  tlsListenersProblem,
} from '../../src/model/table-check.js';
import { issueCertificate } from '../../src/tls/issue.js';
import { TABLE_LIMITS as L } from '../../src/model/table-schema.js';
import { ControlError } from '../../src/nginx/control.js';
import { serviceWithEndpoints, snapshotOf } from '../support/manifests.js';
import { GATEWAY_OPTIONS, gateway, gatewayClass, grpcRoute, listener, route } from '../gateway/fixtures.js';
import { type LuaNginx, startLuaNginx } from './harness.js';

let nginx: LuaNginx;
let version = 0;

beforeAll(async () => {
  nginx = await startLuaNginx();
});

afterAll(async () => {
  await nginx?.stop();
});

/** refusal is nginx's reason for refusing the table (or an entry of it), or null when it took everything. */
async function refusal(push: () => Promise<unknown>): Promise<string | null> {
  try {
    const answer = (await push()) as { refused?: readonly { reason: string }[] } | string;
    const refused = typeof answer === 'object' ? (answer.refused ?? []) : [];
    return refused.length > 0 ? refused.map((r) => r.reason).join('; ') : null;
  } catch (error) {
    if (error instanceof ControlError && error.status === 400) return error.reason;
    throw error;
  }
}

const routesOf = (entry: RouteEntry, key = '80/a.example'): RouteTable => ({
  version: `s${++version}`,
  servers: [{ key, port: 80, routes: [entry] }],
});

/** a CORS filter entry with these fields changed */
const cors = (o: Partial<Extract<RouteFilterEntry, { type: 'CORS' }>>): RouteFilterEntry => ({
  type: 'CORS',
  allowOrigins: ['*'],
  allowCredentials: false,
  allowMethods: [],
  allowHeaders: [],
  exposeHeaders: [],
  maxAge: 5,
  ...o,
});
/** host is a lowercase host name of `n` characters: labels of `fill` (letters, digits, `-`) joined by dots */
const host = (n: number, fill: string) =>
  chars(n, fill.replace(/[^a-z0-9]/g, 'a'))
    .replace(/(.{60})./g, '$1.')
    .replace(/\.$/, 'a');

const baseEntry = (): RouteEntry => ({
  route: 'default/r#0',
  path: { type: 'PathPrefix', value: '/' },
  headers: [],
  queryParams: [],
  filters: [],
  backends: [{ backend: 'default_web_80', weight: 1 }],
  timeouts: {},
});

describe('what the model builds from legal objects at the CRDs’ bounds', () => {
  const options = GATEWAY_OPTIONS;
  // a namespace of 63 characters and a route name of 253: the longest `namespace/name#rule` legal names make
  const NS = 'n'.repeat(63);
  const NAME = `${'r'.repeat(61)}.${'r'.repeat(63)}.${'r'.repeat(63)}.${'r'.repeat(63)}`;

  function routesBuilt(objects: Record<string, unknown>[]) {
    const snapshot = snapshotOf([
      gatewayClass(),
      gateway([listener('http'), listener('grpc', { port: 9000 })], 'gw', NS),
      ...serviceWithEndpoints('web', [{ ip: '127.0.0.2', port: 8080 }], NS),
      ...objects,
    ]);
    const result = buildModel(snapshot, options);
    return { table: result.model.gateway!.routes, problems: result.problems };
  }

  test('a GRPCRoute matching a 1,024-character service and method is pushed and nginx takes it', async () => {
    const service = `a${'b'.repeat(1023)}`;
    const method = `M${'m'.repeat(1023)}`;
    // gRPC goes to a port of GRPCRoutes only (h2c)
    const parentRefs = [{ name: 'gw', namespace: NS, sectionName: 'grpc' }];
    const rules = [{ matches: [{ method: { service, method } }], backendRefs: [{ name: 'web', port: 80 }] }];
    const { table, problems } = routesBuilt([grpcRoute('g', { namespace: NS, parentRefs, rules })]);
    const paths = table.servers.flatMap((s) => s.routes.map((r) => r.path.value));
    expect(paths).toContain(`/${service}/${method}`);
    expect(problems.filter((p) => p.kind === 'GRPCRoute')).toEqual([]);
    expect(await refusal(() => nginx.control.pushRoutes(table))).toBeNull();
  });

  test('an HTTPRoute whose namespace/name#rule is as long as legal names make it is pushed and nginx takes it', async () => {
    expect(NAME).toHaveLength(253);
    const rules = Array.from({ length: 16 }, (_, i) => ({
      matches: [{ path: { type: 'PathPrefix', value: `/r${i}` } }],
      backendRefs: [{ name: 'web', port: 80 }],
    }));
    const parentRefs = [{ name: 'gw', namespace: NS }];
    const { table, problems } = routesBuilt([route(NAME, { namespace: NS, parentRefs, rules })]);
    const labels = table.servers.flatMap((s) => s.routes.map((r) => r.route));
    expect(labels).toContain(`${NS}/${NAME}#15`);
    expect(Math.max(...labels.map((l) => l.length))).toBe(L.routeLabel);
    expect(problems.filter((p) => p.kind === 'HTTPRoute')).toEqual([]);
    expect(await refusal(() => nginx.control.pushRoutes(table))).toBeNull();
  });

  test('a route entry past a bound is left out with a problem naming the route and its match', () => {
    const rules = [
      { matches: [{ path: { type: 'PathPrefix', value: '/' } }], backendRefs: [{ name: 'web', port: 80 }] },
    ];
    const parentRefs = [{ name: 'gw', namespace: NS }];
    // past what the API server allows (256 characters), as an object the controller reads without the CRD could be
    const { table, problems } = routesBuilt([route(`xxx${NAME}`, { namespace: NS, parentRefs, rules })]);
    expect(table.servers.flatMap((s) => s.routes)).toEqual([]);
    expect(problems).toContainEqual(
      expect.objectContaining({
        kind: 'HTTPRoute',
        namespace: NS,
        name: `xxx${NAME}`,
        field: 'spec.rules[0].matches[0]',
      }),
    );
  });
});

/** Bound is one bounded field of an entry: `at(n)` puts a value of size n there (a length, a count or a number). */
interface Bound {
  readonly name: string;
  readonly max: number;
  /** the least legal size, where the generator starts */
  readonly min: number;
  readonly table: 'routes' | 'backends' | 'certificates';
  readonly at: (
    n: number,
    fill: string,
  ) => RouteEntry | Backend | { key: string } | { tls: { listener: string; listeners: string[] } } | ServedCertificate;
}

/** PAIR is a real certificate and key for the certificate entries (nginx parses them). */
const PAIR = await issueCertificate({ commonName: 'bounds.test' });
const certificateOf = (o: Partial<ServedCertificate>): ServedCertificate => ({
  secret: 'ns/name',
  cert: PAIR.certPem,
  key: PAIR.keyPem,
  hosts: ['a.test'],
  servers: [],
  ...o,
});
const chars = (n: number, fill: string) => fill.repeat(Math.ceil(n / fill.length)).slice(0, n);
const bounds: Bound[] = [
  {
    name: 'route label',
    min: 1,
    max: L.routeLabel,
    table: 'routes',
    at: (n, f) => ({ ...baseEntry(), route: chars(n, f) }),
  },
  {
    name: 'exact path',
    min: 1,
    max: L.path,
    table: 'routes',
    at: (n, f) => ({ ...baseEntry(), path: { type: 'Exact', value: `/${chars(n - 1, f)}` } }),
  },
  {
    name: 'regex path',
    min: 1,
    max: L.path,
    table: 'routes',
    at: (n, f) => ({ ...baseEntry(), path: { type: 'RegularExpression', value: `/${chars(n - 1, f)}` } }),
  },
  {
    name: 'header name',
    min: 1,
    max: L.headerName,
    table: 'routes',
    at: (n, f) => ({ ...baseEntry(), headers: [{ type: 'Exact', name: chars(n, f), value: 'v' }] }),
  },
  {
    name: 'query value',
    min: 0,
    max: L.value,
    table: 'routes',
    at: (n, f) => ({ ...baseEntry(), queryParams: [{ type: 'Exact', name: 'q', value: chars(n, f) }] }),
  },
  {
    name: 'set header value',
    min: 0,
    max: L.value,
    table: 'routes',
    at: (n, f) => ({
      ...baseEntry(),
      filters: [{ type: 'RequestHeaderModifier', set: [{ name: 'x', value: chars(n, f) }], add: [], remove: [] }],
    }),
  },
  {
    name: 'rewrite hostname',
    min: 1,
    max: L.host,
    table: 'routes',
    at: (n, f) => ({ ...baseEntry(), filters: [{ type: 'URLRewrite', hostname: chars(n, f) }] }),
  },
  {
    name: 'route backend name',
    min: 1,
    max: L.backendName,
    table: 'routes',
    at: (n, f) => ({ ...baseEntry(), backends: [{ backend: chars(n, f), weight: 1 }] }),
  },
  {
    name: 'weight',
    min: 0,
    max: L.weight,
    table: 'routes',
    at: (n) => ({ ...baseEntry(), backends: [{ backend: 'b', weight: n }] }),
  },
  {
    name: 'timeout',
    min: 0,
    max: L.timeoutMs,
    table: 'routes',
    at: (n) => ({ ...baseEntry(), timeouts: { request: n } }),
  },
  {
    name: 'mirrors',
    min: 0,
    max: L.mirrors,
    table: 'routes',
    at: (n) => ({
      ...baseEntry(),
      filters: Array.from({ length: n }, () => ({ type: 'RequestMirror' as const, backend: 'm', percent: 100 })),
    }),
  },
  {
    name: 'CORS origin',
    min: 12,
    max: L.corsOrigin,
    table: 'routes',
    at: (n, f) => ({ ...baseEntry(), filters: [cors({ allowOrigins: [`https://${host(n - 8, f)}`] })] }),
  },
  {
    name: 'CORS origins',
    min: 0,
    max: L.corsOrigins,
    table: 'routes',
    at: (n) => ({
      ...baseEntry(),
      filters: [cors({ allowOrigins: Array.from({ length: n }, (_, i) => `http://*.o${i}.test:8080`) })],
    }),
  },
  {
    name: 'CORS headers',
    min: 0,
    max: L.corsHeaders,
    table: 'routes',
    at: (n) => ({
      ...baseEntry(),
      filters: [cors({ allowHeaders: Array.from({ length: n }, (_, i) => `x-h${i}`) })],
    }),
  },
  {
    name: 'CORS maxAge',
    min: 1,
    max: L.corsMaxAge,
    table: 'routes',
    at: (n) => ({ ...baseEntry(), filters: [cors({ maxAge: n })] }),
  },
  {
    name: 'HTTPS listeners of a socket',
    min: 0,
    max: L.tlsListeners,
    table: 'routes',
    at: (n) => ({
      tls: { listener: '', listeners: Array.from({ length: n }, (_, i) => (i % 2 ? `*.l${i}.test` : `l${i}.test`)) },
    }),
  },
  {
    name: 'HTTPS listener hostname',
    min: 1,
    max: L.host,
    table: 'routes',
    at: (n, f) => ({ tls: { listener: host(n, f), listeners: [] } }),
  },
  {
    name: 'server key',
    min: 4,
    max: L.serverKey,
    table: 'routes',
    at: (n, f) => ({ key: `80/${chars(n - 3, f)}` }),
  },
  {
    name: 'backend name',
    min: 1,
    max: L.backendName,
    table: 'backends',
    at: (n, f) => ({ name: chars(n, f), balance: 'round_robin', hashKey: null, endpoints: [] }),
  },
  {
    name: 'hash key',
    min: 2,
    max: L.hashKey,
    table: 'backends',
    at: (n, f) => ({
      name: 'b',
      balance: 'chash',
      hashKey: `$${chars(n - 1, f.replace(/[^a-z]/g, 'a'))}`,
      endpoints: [],
    }),
  },
  {
    name: 'certificate secret',
    min: 4,
    max: L.secret,
    table: 'certificates',
    at: (n, f) => certificateOf({ secret: `ns/${chars(n - 3, f.replace(/[^a-z0-9.-]/g, 'a'))}` }),
  },
  {
    name: 'certificate host',
    min: 1,
    max: L.host,
    table: 'certificates',
    at: (n, f) => certificateOf({ hosts: [chars(n, f)] }),
  },
];

/** bothSides is the model's verdict and nginx's on one entry: null when taken, else the reason. */
async function bothSides(bound: Bound, n: number, fill: string): Promise<[string | null, string | null]> {
  const made = bound.at(n, fill);
  if (bound.table === 'certificates') {
    const c = made as ServedCertificate;
    const model =
      certificateProblem(c.secret, c.cert, c.key) ?? c.hosts.map(hostProblem).find((p) => p !== null) ?? null;
    const table = { version: `c${++version}`, certificates: [c] };
    return [model, await refusal(() => nginx.control.pushCertificates(table))];
  }
  if (bound.table === 'backends') {
    const backend = made as Backend;
    const table = { version: `b${++version}`, backends: [backend] };
    return [backendProblem(backend), await refusal(() => nginx.control.pushBackends(table))];
  }
  if ('tls' in made) {
    const table: RouteTable = {
      version: `s${++version}`,
      servers: [{ key: '443/a.example', port: 443, routes: [baseEntry()], tls: made.tls }],
    };
    return [tlsListenersProblem(made.tls), await refusal(() => nginx.control.pushRoutes(table))];
  }
  if ('key' in made && !('route' in made)) {
    const table = routesOf(baseEntry(), made.key);
    return [serverKeyProblem(made.key), await refusal(() => nginx.control.pushRoutes(table))];
  }
  const entry = made as RouteEntry;
  return [routeEntryProblem(entry), await refusal(() => nginx.control.pushRoutes(routesOf(entry)))];
}

// letters every one of those fields takes (a regex of them compiles; a hash key's variable name is letters)
const fills = fc.constantFrom('a', 'ab-', 'x.y', 'z9');

describe.each(bounds)('$name: at most $max', (bound) => {
  test('at every size up to the bound, both sides take it', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: bound.min, max: bound.max }), fills, async (n, fill) => {
        expect(await bothSides(bound, n, fill)).toEqual([null, null]);
      }),
      {
        numRuns: 8,
        examples: [
          [bound.max, 'a'],
          [bound.min, 'a'],
        ],
      },
    );
  });

  test('one past it, both refuse it', async () => {
    const [model, lua] = await bothSides(bound, bound.max + 1, 'a');
    expect(model).not.toBeNull();
    expect(lua).not.toBeNull();
  });
});
