/**
 * The push path's quarantine (src/sync/table-quarantine.ts): each entry nginx refused is traced, in the model it was
 * built from, to the objects that made it; those alone are held, with a problem, until they change.
 */
import { describe, expect, it } from 'vitest';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions, type BuildOptions } from '../../src/model/build-types.js';
import { TableQuarantine } from '../../src/sync/table-quarantine.js';
import type { Snapshot } from '../../src/model/snapshot.js';
import { CONTROLLER, gateway, gatewayClass, listener, route } from '../gateway/fixtures.js';
import { ingress, ingressClass, serviceWithEndpoints, snapshotOf } from '../support/manifests.js';

const LUA = { modules: [], packagePath: '/lua/?.lua;;', controlSocket: '/run/ia/control.sock', requestMetrics: false };
const options: BuildOptions = { ...defaultBuildOptions, dynamic: LUA, gateway: { controllerName: CONTROLLER } };

function cluster(): Snapshot {
  return snapshotOf([
    ingressClass(),
    gatewayClass(),
    gateway([listener('http', { port: 8080 })]),
    ingress('a', { 'a.test': [{ path: '/', service: 'a' }] }, { namespace: 'one' }),
    ingress('b', { 'b.test': [{ path: '/', service: 'b' }] }, { namespace: 'two' }),
    ...serviceWithEndpoints('a', [{ ip: '127.0.0.2', port: 80 }], 'one'),
    ...serviceWithEndpoints('b', [{ ip: '127.0.0.3', port: 80 }], 'two'),
    ...serviceWithEndpoints('web', [{ ip: '127.0.0.4', port: 80 }]),
    route('r', { hostnames: ['r.test'] }),
    route('s', { hostnames: ['s.test'] }),
  ]);
}

describe('TableQuarantine', () => {
  it('a refused backend holds the Ingress proxying to it, and only it, until it changes', () => {
    const snapshot = cluster();
    const model = buildModel(snapshot, options).model;
    const name = model.upstreams.find((u) => u.name.startsWith('one_a'))!.name;
    const held = new TableQuarantine();
    held.judge([{ table: 'backends', key: name, reason: 'endpoint 1: address x' }], { model, snapshot });
    expect(held.heldKeys()).toEqual(['Ingress/one/a']);
    const next = held.prepare(snapshot);
    expect(next.snapshot.ingresses.map((i) => i.metadata?.name)).toEqual(['b']);
    expect(next.problems).toEqual([
      {
        kind: 'Ingress',
        namespace: 'one',
        name: 'a',
        field: 'spec.rules',
        message: `nginx refused the backends entry ${name}: endpoint 1: address x; it is left out until it changes`,
      },
    ]);
    // changed: let back in
    const changed = { ...snapshot, ingresses: snapshot.ingresses.map((i) => ({ ...i })) };
    expect(held.prepare(changed).snapshot.ingresses).toHaveLength(2);
    expect(held.heldKeys()).toEqual([]);
  });

  it('a refused route rule leaves that HTTPRoute’s entries out, its status saying why; the other route stays', () => {
    const snapshot = cluster();
    const result = buildModel(snapshot, options);
    const table = result.model.gateway!.routes;
    const key = table.servers.find((s) => s.routes.some((r) => r.route === 'default/r#0'))!.key;
    const held = new TableQuarantine();
    held.judge([{ table: 'routes', key: `${key} default/r#0`, reason: 'route 1: method BREW' }], {
      model: result.model,
      snapshot,
    });
    expect(held.heldKeys()).toEqual(['HTTPRoute/default/r']);
    const out = held.routes(table, result.gateway!.status);
    const labels = out.table.servers.flatMap((s) => s.routes.map((r) => r.route));
    expect(labels).not.toContain('default/r#0');
    expect(labels).toContain('default/s#0');
    expect(out.table.version).not.toBe(table.version);
    const status = (name: string) =>
      out.status!.httpRoutes.find((r) => r.name === name)!.parents[0]!.conditions.find((c) => c.type === 'Accepted');
    expect(status('r')).toMatchObject({ status: 'False', reason: 'UnsupportedValue' });
    expect(status('r')!.message).toContain('nginx refused the routes entry');
    expect(status('s')).toMatchObject({ status: 'True' });
    // the route is still built (so its status is written): only its entries are held back
    expect(held.prepare(snapshot).snapshot.httpRoutes).toHaveLength(2);
  });
});
