/**
 * The Lua balancer while endpoints come and go (EndpointSlice changes are pushed to nginx, not
 * reloaded): a cookie's sticky peer stays while other endpoints leave and arrive, upstream-hash-by
 * keys stay with their endpoint (only keys of an endpoint that left move), and load-balance ewma
 * keeps away from a slow endpoint. Through the real controller.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Backend as TableBackend } from '../../src/model/pushed-tables.js';
import { waitFor, type Cluster } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { startBackend, type Backend } from '../support/net.js';
import { startSlowBackend, type SlowBackend } from '../support/slow-backend.js';
import { ann, inBatches, startScene, type Scene } from './annotations-harness.js';

let scene: Scene;
let cluster: Cluster;
const pods: Record<string, Backend> = {};
let slow: SlowBackend;
const port = (name: string) => pods[name]!.port;

/** The EndpointSlice of Service `moving` that holds pod `name` (one slice per pod: see serviceWithEndpoints). */
const sliceOf = (name: string) => serviceWithEndpoints('moving', [{ port: port(name) }])[1]!;

beforeAll(async () => {
  for (const name of ['m1', 'm2', 'm3', 'm4', 'fast']) pods[name] = await startBackend(name);
  slow = await startSlowBackend('slow', 200);
  scene = await startScene(
    [
      ingressClass(),
      ...serviceWithEndpoints('moving', [{ port: port('m1') }, { port: port('m2') }, { port: port('m3') }]),
      ...serviceWithEndpoints('latency', [{ port: port('fast') }, { port: slow.port }]),
      ingress(
        'sticky',
        { 'sticky.test': [{ path: '/', service: 'moving' }] },
        { annotations: ann({ affinity: 'cookie' }) },
      ),
      ingress(
        'hashed',
        { 'hash.test': [{ path: '/', service: 'moving' }] },
        { annotations: ann({ 'upstream-hash-by': '$arg_user' }) },
      ),
      ingress(
        'ewma',
        { 'ewma.test': [{ path: '/', service: 'latency' }] },
        { annotations: ann({ 'load-balance': 'ewma' }) },
      ),
    ],
    { mode: 'lua' },
  );
  cluster = scene.cluster!;
}, 60_000);

afterAll(async () => {
  await scene?.stop();
  await Promise.all(Object.values(pods).map((p) => p.close()));
  await slow?.close();
});

/** movingNow names the pods of Service `moving` in the tables nginx holds (every backend of it has the same ones). */
function movingNow(): string[] {
  const context = cluster.actor('nginx')?.context as
    | { tables: { backends: { backends: TableBackend[] } } | null }
    | undefined;
  const backend = context?.tables?.backends.backends.find((b) => b.name.startsWith('default_moving_'));
  const ports = new Set((backend?.endpoints ?? []).map((e) => e.port));
  return Object.keys(pods).filter((name) => ports.has(port(name)));
}

/** movingPushed waits until nginx holds tables whose every backend of Service `moving` has exactly `names`' ports. */
async function movingPushed(...names: string[]): Promise<void> {
  const wanted = names.map(port).sort().join(',');
  await waitFor(`the endpoints of moving pushed as ${names.join(', ')}`, () => {
    const context = cluster.actor('nginx')?.context as
      | { tables: { backends: { version: string; backends: TableBackend[] } } | null; pushed: unknown }
      | undefined;
    const tables = context?.tables;
    const pushed = context?.pushed as { backends: { version: string } } | null | undefined;
    if (!tables || pushed?.backends.version !== tables.backends.version) return false;
    const moving = tables.backends.backends.filter((b) => b.name.startsWith('default_moving_'));
    return (
      moving.length >= 2 &&
      moving.every(
        (b) =>
          b.endpoints
            .map((e) => e.port)
            .sort()
            .join(',') === wanted,
      )
    );
  });
}

describe('the Lua balancer while endpoints come and go', () => {
  it('cookie affinity: each client keeps its endpoint while other endpoints leave and arrive', async () => {
    const clients = await inBatches(30, 5, async () => {
      const first = await scene.http('sticky.test', '/');
      return { cookie: (first.headers['set-cookie']?.[0] ?? '').split(';')[0]!, peer: first.backend! };
    });
    expect(clients.every((c) => c.cookie.startsWith('INGRESSCOOKIE='))).toBe(true);
    expect(new Set(clients.map((c) => c.peer)).size).toBeGreaterThanOrEqual(2);
    const peersNow = () =>
      inBatches(clients.length, 5, (i) =>
        scene.http('sticky.test', '/', { headers: { cookie: clients[i]!.cookie } }).then((r) => r.backend!),
      );
    expect(await peersNow()).toEqual(clients.map((c) => c.peer));

    await cluster.remove(sliceOf('m3'));
    await movingPushed('m1', 'm2');
    const afterLeaving = await peersNow();
    for (const [i, c] of clients.entries()) {
      if (c.peer === 'm3') expect(afterLeaving[i]).not.toBe('m3');
      else expect(afterLeaving[i], `client ${i}`).toBe(c.peer);
    }

    await cluster.apply(sliceOf('m4'));
    await movingPushed('m1', 'm2', 'm4');
    expect(await peersNow()).toEqual(afterLeaving);

    await cluster.apply(sliceOf('m3'));
    await movingPushed('m1', 'm2', 'm3', 'm4');
    expect(await peersNow()).toEqual(afterLeaving);
  }, 60_000);

  it('upstream-hash-by: a key moves only when its endpoint leaves, and is back once it returns', async () => {
    const users = Array.from({ length: 40 }, (_, i) => `u${i}`);
    const owners = () =>
      inBatches(users.length, 5, (i) => scene.http('hash.test', `/?user=${users[i]}`).then((r) => r.backend!));
    const before = await owners();
    // every pod the tables hold: one that happens to own none of the 40 keys still stays
    const present = movingNow();
    const leaving = before[0]!;
    await cluster.remove(sliceOf(leaving));
    const staying = present.filter((p) => p !== leaving);
    await movingPushed(...staying);
    const afterLeaving = await owners();
    for (const [i, owner] of before.entries()) if (owner !== leaving) expect(afterLeaving[i], users[i]).toBe(owner);

    await cluster.apply(sliceOf(leaving));
    await movingPushed(...present);
    // the ring is the endpoints' own: the same endpoints give every key its first owner back
    expect(await owners()).toEqual(before);
  }, 60_000);

  it('load-balance ewma: requests keep away from an endpoint 200 ms slower', async () => {
    const seen = await inBatches(60, 4, () => scene.http('ewma.test', '/').then((r) => r.backend));
    const slowShare = seen.filter((b) => b === 'slow').length;
    expect(seen.every((b) => b === 'slow' || b === 'fast')).toBe(true);
    // each worker tries the slow endpoint while it has no measurement of it, then keeps away: round robin gives it 30
    expect(slowShare).toBeLessThanOrEqual(12);
  }, 60_000);
});
