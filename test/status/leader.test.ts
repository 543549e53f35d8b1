/**
 * LeaseElector against the test API server (real HTTPS, real 409s), with each elector on a
 * clock the test moves: the first one creates the Lease, a second one waits exactly until the
 * holder's Lease would expire as it observed it, two racing electors get one winner, a
 * released Lease is taken at once, and a renewal keeps others out.
 */
import { CoordinationV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActor, fromPromise, waitFor } from 'xstate';
import { statusMachine, type LeaseResult } from '../../machines/status.machine.js';
import { startApiServer, type ApiServer } from '../../src/dev/api-server/server.js';
import { electionTimings, LeaseElector } from '../../src/kube/leader.js';

let api: ApiServer;
let coordination: CoordinationV1Api;
let leaseCount = 0;

beforeAll(async () => {
  api = await startApiServer({
    seed: [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ingress-actors' } }] as never,
  });
  const kc = new KubeConfig();
  kc.loadFromString(api.kubeconfigText);
  coordination = kc.makeApiClient(CoordinationV1Api);
});
afterAll(async () => api?.close());

/** electors makes `n` electors for one fresh Lease, each with its own clock starting at 1e12 ms. */
function electors(n: number, leaseDurationMs = 10_000) {
  const name = `leader-${++leaseCount}`;
  const clocks = Array.from({ length: n }, () => ({ now: 1e12 }));
  const list = clocks.map(
    (clock, i) =>
      new LeaseElector(coordination, {
        namespace: 'ingress-actors',
        name,
        identity: `replica-${i}`,
        leaseDurationMs,
        now: () => clock.now,
      }),
  );
  const read = () => coordination.readNamespacedLease({ name, namespace: 'ingress-actors' });
  return { list, clocks, read };
}

describe('LeaseElector', () => {
  it('creates the Lease when none exists and holds it', async () => {
    const {
      list: [a],
      read,
    } = electors(1);
    expect(await a!.tryAcquireOrRenew()).toEqual({ leader: true, holder: 'replica-0', expiresInMs: null });
    const lease = await read();
    expect(lease.spec).toMatchObject({ holderIdentity: 'replica-0', leaseDurationSeconds: 10, leaseTransitions: 0 });
    expect(String(lease.spec?.renewTime)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/); // MicroTime
  });

  it('a follower waits until the holder’s Lease expires by its own observation, then takes over', async () => {
    const {
      list: [a, b],
      clocks,
      read,
    } = electors(2);
    await a!.tryAcquireOrRenew();
    clocks[1]!.now += 123_456; // b's clock is far ahead: skew must not matter, only what b observed
    expect(await b!.tryAcquireOrRenew()).toEqual({ leader: false, holder: 'replica-0', expiresInMs: 10_000 });
    clocks[1]!.now += 9_999;
    expect((await b!.tryAcquireOrRenew()).expiresInMs).toBe(1);
    clocks[1]!.now += 1;
    expect(await b!.tryAcquireOrRenew()).toMatchObject({ leader: true, holder: 'replica-1' });
    expect((await read()).spec).toMatchObject({ holderIdentity: 'replica-1', leaseTransitions: 1 });
    // The old leader finds out at its next renewal.
    expect(await a!.tryAcquireOrRenew()).toMatchObject({ leader: false, holder: 'replica-1' });
    expect(a!.isLeader).toBe(false);
  });

  it('a release waits for a renewal still in flight, so the Lease ends up free', async () => {
    const {
      list: [a, b],
      read,
    } = electors(2);
    await a!.tryAcquireOrRenew();
    // The status machine stops its renew actor on status.stop, but the request goes on; here the
    // renewal's read reaches the (real) server 100 ms late, after a release running beside it would be done.
    let delayNextRead = false;
    const slowReads = new Proxy(coordination, {
      get: (target, key, receiver) =>
        key === 'readNamespacedLease'
          ? async (request: Parameters<CoordinationV1Api['readNamespacedLease']>[0]) => {
              if (delayNextRead) {
                delayNextRead = false;
                await new Promise((r) => setTimeout(r, 100));
              }
              return target.readNamespacedLease(request);
            }
          : Reflect.get(target, key, receiver),
    });
    // replica-0 again, as a holds the Lease: the same replica through the slow client.
    const slow = new LeaseElector(slowReads, {
      namespace: 'ingress-actors',
      name: (await read()).metadata!.name!,
      identity: 'replica-0',
      leaseDurationMs: 10_000,
    });
    expect((await slow.tryAcquireOrRenew()).leader).toBe(true);
    delayNextRead = true;
    const renewal = slow.tryAcquireOrRenew();
    expect(await slow.release()).toBe(true);
    expect((await renewal).leader).toBe(true);
    expect((await read()).spec?.holderIdentity).toBeFalsy();
    expect(await b!.tryAcquireOrRenew()).toMatchObject({ leader: true, holder: 'replica-1' });
  });

  it('a follower stopped while its acquire is in flight gives up the Lease that acquire won', async () => {
    const {
      list: [, b],
      read,
    } = electors(2);
    await b!.tryAcquireOrRenew();
    await b!.release();
    const name = (await read()).metadata!.name!;
    // replica-0 campaigns through a client whose read of the free Lease lands 100 ms late.
    const slowReads = new Proxy(coordination, {
      get: (target, key, receiver) =>
        key === 'readNamespacedLease'
          ? async (request: Parameters<CoordinationV1Api['readNamespacedLease']>[0]) => {
              await new Promise((r) => setTimeout(r, 100));
              return target.readNamespacedLease(request);
            }
          : Reflect.get(target, key, receiver),
    });
    const elector = new LeaseElector(slowReads, {
      namespace: 'ingress-actors',
      name,
      identity: 'replica-0',
      leaseDurationMs: 10_000,
    });
    const machine = statusMachine.provide({
      actors: {
        acquireLease: fromPromise<LeaseResult, void>(() => elector.tryAcquireOrRenew()),
        releaseLease: fromPromise<boolean, void>(() => elector.release()),
      },
    });
    const status = createActor(machine, {
      input: {
        leaseDurationMs: 10_000,
        retryPeriodMs: 2_000,
        renewDeadlineMs: 6_000,
        resyncPeriodMs: 60_000,
        updateStatus: false,
        updateStatusOnShutdown: false,
        stopTimeoutMs: 5_000,
      },
    }).start();
    status.send({ type: 'status.stop' });
    const done = await waitFor(status, (s) => s.status === 'done', { timeout: 5_000 });
    expect(done.output).toEqual({ wasLeader: false, cleared: false, released: true });
    expect((await read()).spec?.holderIdentity).toBeFalsy();
    expect(await b!.tryAcquireOrRenew()).toMatchObject({ leader: true, holder: 'replica-1' });
  });

  it('a renewal restarts the follower’s observation', async () => {
    const {
      list: [a, b],
      clocks,
    } = electors(2);
    await a!.tryAcquireOrRenew();
    await b!.tryAcquireOrRenew();
    clocks[0]!.now += 8_000;
    clocks[1]!.now += 8_000;
    await a!.tryAcquireOrRenew(); // renewed: a new renewTime
    expect((await b!.tryAcquireOrRenew()).expiresInMs).toBe(10_000);
  });

  it('two electors racing for a free Lease: exactly one wins, the other got a 409', async () => {
    for (let round = 0; round < 5; round++) {
      const { list, read } = electors(2);
      const results = await Promise.all(list.map((e) => e.tryAcquireOrRenew()));
      expect(results.filter((r) => r.leader)).toHaveLength(1);
      expect((await read()).spec?.holderIdentity).toBe(results[0]!.leader ? 'replica-0' : 'replica-1');
    }
  });

  it('release frees the Lease for the next try, and only the holder can release', async () => {
    const {
      list: [a, b],
      read,
    } = electors(2);
    await a!.tryAcquireOrRenew();
    await b!.tryAcquireOrRenew();
    expect(await b!.release()).toBe(false);
    expect(await a!.release()).toBe(true);
    const lease = await read();
    expect(lease.spec?.holderIdentity).toBeUndefined();
    expect(lease.spec?.leaseDurationSeconds).toBe(1);
    expect(await b!.tryAcquireOrRenew()).toMatchObject({ leader: true });
  });

  it('derives the renew deadline and retry period from the TTL as kube-controller-manager does', () => {
    expect(electionTimings(15_000)).toEqual({ leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 });
    expect(electionTimings(30_000)).toEqual({ leaseDurationMs: 30_000, renewDeadlineMs: 20_000, retryPeriodMs: 4_000 });
  });
});
