/**
 * RequestMetrics.setModel looks only at the servers whose object changed since the last model. Differential
 * (fast-check, seed 29): models whose servers are kept as the same objects while unchanged, as an incremental build
 * hands them, and sometimes all new, as a fresh build does; after each, the routes and Ingresses it holds are
 * routesOf's for that model, worked out from scratch.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { routesOf } from '../../src/http/request-metrics.js';
import type { NginxModel, Server } from '../../src/model/nginx-model.js';
import { setUpRequestMetrics } from '../support/request-metrics.js';

/** a host's routes: each its own Ingress of two namespaces, so Ingresses come and go with their routes */
type Routes = readonly { readonly id: number; readonly ingress: number }[];

const serverOf = (host: string, routes: Routes): Server =>
  ({
    host,
    locations: routes.map((r) => ({
      path: `/${r.id}`,
      route: { id: `r${r.id}`, namespace: `ns-${r.ingress % 2}`, ingressName: `ing-${r.ingress}`, serviceName: 's' },
    })),
  }) as unknown as Server;

const step = fc.record({
  host: fc.nat(30),
  routes: fc.array(fc.record({ id: fc.nat(4), ingress: fc.nat(12) }), { maxLength: 3 }),
  fresh: fc.boolean(),
});

describe('RequestMetrics.setModel, incrementally', () => {
  it('holds the routes and Ingresses of the last model, as from scratch', () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 60 }), (steps) => {
        const { requests } = setUpRequestMetrics();
        const hosts = new Map<string, Server>();
        const defaultServer = serverOf('_', [{ id: 0, ingress: 0 }]);
        for (const s of steps) {
          const host = `h${s.host}.test`;
          if (s.routes.length === 0) hosts.delete(host);
          else hosts.set(host, serverOf(host, s.routes));
          // a fresh build: every server a new object
          if (s.fresh) for (const [h, server] of hosts) hosts.set(h, { ...server });
          const servers = [...hosts.keys()].sort().map((h) => hosts.get(h)!);
          const model = { defaultServer, servers } as unknown as NginxModel;
          requests.setModel(model);
          const expected = routesOf(model);
          expect(new Map(requests.currentRoutes())).toEqual(expected);
          expect(requests.currentOwners()).toEqual(
            new Set([...expected.values()].map((r) => `${r.namespace}/${r.ingress}`)),
          );
        }
      }),
      { seed: 29, numRuns: 200 },
    );
  });
});
