/**
 * Finding 3 (issue 15, habits): the inspector shows each actor once. xstate gives every
 * invocation a new sessionId, so each Lease renewal (renewLease), each sync run (runSync) and each
 * reload used to reach the viewer as one more actor: a viewer's list grew with every sync and
 * every renewal. The relay (src/inspect.ts, ActorSlots) shows an actor under the sessionId of the
 * first one that had its id under the same parent. Here: the whole controller with its inspect
 * hook, through N syncs and Lease renewals, twice; xstate's own count grows with N, the viewers'
 * does not.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { AnyActorRef, InspectionEvent } from 'xstate';
import { parseControllerFlags } from '../../src/cli/controller-flags.js';
import { startInspector, type Inspector } from '../../src/inspect.js';
import { startApiServer, type ApiServer } from '../../src/dev/api-server/server.js';
import { startController, type Controller } from '../../src/main.js';
import { waitFor } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { get, startBackend, type Backend } from '../support/net.js';
import { testControllerFlags } from '../support/controller-flags.js';

interface Message {
  type: string;
  sessionId: string;
  name?: string;
}

/** viewer connects a WebSocket client, as the browser page does, and keeps every message. */
async function viewer(url: string): Promise<{ messages: Message[]; close(): void }> {
  const messages: Message[] = [];
  const ws = await new Promise<WebSocket>((resolve, reject) => {
    const socket = new WebSocket(url);
    socket.on('message', (data) => messages.push(JSON.parse(data.toString()) as Message));
    socket.once('open', () => resolve(socket));
    socket.once('error', reject);
  });
  return { messages, close: () => ws.close() };
}

const HOST = 'slots.example.com';
const actorsIn = (messages: readonly Message[]) =>
  new Set(messages.filter((m) => m.type === '@xstate.actor').map((m) => m.sessionId));

let api: ApiServer;
let backend: Backend;
let dir: string;
let inspector: Inspector;
let controller: Controller;
let early: Awaited<ReturnType<typeof viewer>>;
let httpPort: number;
const created = new Map<string, string>(); // sessionId → actor id, as xstate reports them

beforeAll(async () => {
  backend = await startBackend('app');
  api = await startApiServer({
    seed: [
      ingressClass(),
      ...serviceWithEndpoints('app', [{ port: backend.port }]),
      ingress('app', { [HOST]: [{ path: '/', service: 'app' }] }),
    ] as never,
  });
  dir = await mkdtemp(join(tmpdir(), 'ia-slots-'));
  await api.writeKubeconfig(join(dir, 'kubeconfig'));
  inspector = await startInspector({ port: 0 });
  early = await viewer(inspector.wsUrl);
  const first = await testControllerFlags(join(dir, 'kubeconfig'), join(dir, 'conf'));
  httpPort = first.httpPort;
  const parsed = parseControllerFlags([
    ...first.flags,
    '--sync-rate-limit',
    '10',
    '--shutdown-timeout',
    '5',
    // A Lease renewal every 133 ms.
    '--election-ttl',
    '1',
    '--election-id',
    'slots',
  ]);
  if (!('config' in parsed)) throw new Error('unexpected --help');
  controller = await startController(parsed.config, pino({ level: 'silent' }), {
    inspect: (event: InspectionEvent) => {
      if (event.type === '@xstate.actor')
        created.set((event.actorRef as AnyActorRef).sessionId, (event.actorRef as AnyActorRef).id);
      inspector.inspect(event);
    },
  });
  await waitFor(
    'the app served',
    async () => (await get({ host: HOST, path: '/', port: httpPort })).backend === 'app',
    15_000,
  );
}, 30_000);

afterAll(async () => {
  early?.close();
  if (controller?.root.getSnapshot().status === 'active') controller.stop();
  await controller?.exitCode;
  await inspector?.close();
  await api?.close();
  await backend?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

let serial = 0;
/**
 * syncsAndRenewals changes the Ingress n times (each change served: one sync, one reload) and waits for n more Lease
 * renewals.
 */
async function syncsAndRenewals(n: number): Promise<void> {
  const renewals = () => (controller.root.system.get('status')!.getSnapshot().context as { renewals: number }).renewals;
  const renewedBefore = renewals();
  for (let i = 0; i < n; i++) {
    const path = `/p${++serial}`;
    await api.registry.apply(
      ingress('app', {
        [HOST]: [
          { path: '/', service: 'app' },
          { path, service: 'app' },
        ],
      }) as never,
    );
    await waitFor(
      `${path} served`,
      async () => (await get({ host: HOST, path, port: httpPort })).backend === 'app',
      10_000,
    );
  }
  await waitFor(`${n} more Lease renewals`, () => renewals() >= renewedBefore + n, 10_000);
  // Everything sent so far has reached the early viewer.
  const marker = created.size;
  await waitFor(
    'the relay caught up',
    () => early.messages.filter((m) => m.type === '@xstate.actor').length >= marker,
    5000,
  );
}

/** late connects a viewer now and counts the actors it is shown (the replay of live actors and the recent history). */
async function late(): Promise<Set<string>> {
  const client = await viewer(inspector.wsUrl);
  try {
    await waitFor('the replay', () => client.messages.length > 0, 5000);
    await new Promise((r) => setTimeout(r, 200));
    return actorsIn(client.messages);
  } finally {
    client.close();
  }
}

it('finding 3: N syncs and Lease renewals do not add actors to the viewer: a late one is shown the same actors after ' +
  '3 as after 12', async () => {
  await syncsAndRenewals(2); // every kind of actor has run once (a renewal, a sync, a reload)
  const createdBefore = created.size;
  await syncsAndRenewals(3);
  const [liveAfter3, lateAfter3, createdAfter3] = [actorsIn(early.messages), await late(), created.size];
  await syncsAndRenewals(12);
  const [liveAfter15, lateAfter15, createdAfter15] = [actorsIn(early.messages), await late(), created.size];

  // xstate itself created a new actor for each sync, reload and renewal...
  expect(createdAfter3 - createdBefore).toBeGreaterThanOrEqual(3);
  expect(createdAfter15 - createdAfter3).toBeGreaterThanOrEqual(12);
  const names = new Set(created.values());
  for (const name of ['runSync', 'reload']) expect(names, name).toContain(name);
  expect(
    [...names].some((name) => name.includes('renewing')),
    [...names].join(' '),
  ).toBe(true);
  // ...but the viewers are shown one actor per place: the same ones, however many calls.
  expect([...liveAfter15]).toEqual([...liveAfter3]);
  expect(lateAfter15.size).toBeLessThanOrEqual(liveAfter3.size);
  expect(lateAfter3.size).toBeLessThanOrEqual(liveAfter3.size);
  expect(liveAfter3.size).toBeLessThan(createdAfter3);
}, 60_000);
