import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildGatewayRoutes } from '../../src/model/gateway/index.js';
import { checkGatewayHostname, checkPath } from '../../src/model/validate.js';
import { gateway, input, listener, route } from './fixtures.js';

const pathValue = fc.constantFrom('/', '/a', '/a/b', '/b', '/a/b/c');
const arbMatch = fc.record(
  {
    path: fc.record({ type: fc.constantFrom('Exact', 'PathPrefix'), value: pathValue }),
    method: fc.constantFrom('GET', 'POST'),
    headers: fc.array(fc.record({ name: fc.constantFrom('x-a', 'x-b', 'x-c'), value: fc.constantFrom('1', '2') }), {
      maxLength: 3,
    }),
    queryParams: fc.array(fc.record({ name: fc.constantFrom('p', 'q'), value: fc.constantFrom('1', '2') }), {
      maxLength: 2,
    }),
  },
  { requiredKeys: ['path'] },
);
const arbRoutes = fc.uniqueArray(
  fc.record({
    name: fc.constantFrom('a', 'b', 'c', 'd', 'e'),
    day: fc.integer({ min: 1, max: 3 }),
    rules: fc.array(fc.array(arbMatch, { minLength: 1, maxLength: 2 }), { minLength: 1, maxLength: 3 }),
  }),
  { selector: (r) => r.name, maxLength: 5 },
);

const build = (routes: { name: string; day: number; rules: unknown[][] }[]) =>
  buildGatewayRoutes(
    input({
      httpRoutes: routes.map((r) =>
        route(r.name, {
          created: `2026-01-0${r.day}T00:00:00Z`,
          rules: r.rules.map((matches) => ({ matches, backendRefs: [{ name: 'web', port: 80 }] })),
        }),
      ),
    }),
  );

describe('Gateway API core properties', () => {
  it('the served order does not depend on the order the routes arrive in', () => {
    fc.assert(
      fc.property(arbRoutes, fc.infiniteStream(fc.nat()), (routes, seeds) => {
        const shuffled = routes
          .map((r) => ({ r, k: seeds.next().value }))
          .sort((x, y) => x.k - y.k)
          .map((x) => x.r);
        expect(build(shuffled).listeners).toEqual(build(routes).listeners);
      }),
      { numRuns: 200 },
    );
  });

  it('never throws on arbitrary objects, and what it serves passed the validators', () => {
    const anyValue = fc.anything({ maxDepth: 3 });
    const arbRoute = fc.record({
      hostnames: fc.oneof(fc.array(fc.oneof(fc.string(), fc.constantFrom('a.com', '*.a.com', 'x.a.com'))), anyValue),
      rules: fc.oneof(
        fc.array(
          fc.record({
            matches: fc.array(
              fc.record({ path: fc.record({ type: fc.constantFrom('Exact', 'PathPrefix'), value: fc.string() }) }),
            ),
            backendRefs: anyValue,
            filters: anyValue,
          }),
        ),
        anyValue,
      ),
    });
    const arbListener = fc.record({
      hostname: fc.oneof(fc.string(), fc.constantFrom('*.a.com', 'a.com')),
      port: anyValue,
    });
    fc.assert(
      fc.property(fc.array(arbRoute, { maxLength: 3 }), arbListener, (routes, l) => {
        const result = buildGatewayRoutes(
          input({
            gateways: [gateway([listener('http', l)])],
            httpRoutes: routes.map((r, i) => ({ ...route(`r${i}`), spec: { parentRefs: [{ name: 'gw' }], ...r } })),
          }),
        );
        for (const served of result.listeners) {
          for (const host of served.hosts) {
            if (host.hostname !== null) expect(checkGatewayHostname(host.hostname).ok).toBe(true);
            for (const r of host.routes) expect(checkPath(r.match.path.value).ok).toBe(true);
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
