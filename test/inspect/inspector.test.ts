/**
 * `--inspect`: real WebSocket clients (ws) connected to the inspector relay receive, over the
 * network, an @xstate.actor message for every actor the controller creates, snapshots with each
 * one's state, and the events actors send one another; a client that connects late is brought
 * up to date; and the real CLI process serves the page and the relay with `--inspect`.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { AnyActorRef, InspectionEvent } from 'xstate';
import { parseControllerFlags } from '../../src/cli/controller-flags.js';
import { originAllowed, startInspector, type Inspector } from '../../src/inspect.js';
import { startTestApi, type TestApi } from '../support/kube-api.js';
import { GATEWAY_KINDS, WATCHED_KINDS, watchedKinds } from '../../src/kube/kinds.js';

// --enable-gateway-api is on by default: the Gateway API's watchers run too, `unserved` without its CRDs.
const ALL_KINDS = watchedKinds(true);
const UNSERVED = GATEWAY_KINDS.filter((k) => k !== 'Namespace');
import { startController, type Controller } from '../../src/main.js';
import { queueIdle, waitFor } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { freePort, get, startBackend, type Backend } from '../support/net.js';
import { testControllerFlags } from '../support/controller-flags.js';

/** Message is what the relay forwards: @statelyai/inspect's serialised inspection events. */
interface Message {
  type: '@xstate.actor' | '@xstate.snapshot' | '@xstate.event';
  sessionId: string;
  name?: string;
  sourceId?: string;
  event?: { type: string };
  snapshot?: { value?: unknown; status?: string };
}

/** viewer connects a WebSocket client, as the browser page does, and keeps every message. */
async function viewer(url: string): Promise<{ messages: Message[]; close(): void }> {
  const messages: Message[] = [];
  const ws: WebSocket = (await waitFor<WebSocket | false>(
    `the relay at ${url}`,
    () =>
      new Promise<WebSocket | false>((resolve) => {
        const socket = new WebSocket(url);
        socket.on('message', (data) => messages.push(JSON.parse(data.toString()) as Message));
        socket.once('open', () => resolve(socket));
        socket.once('error', () => resolve(false));
      }),
    10_000,
    100,
  )) as WebSocket;
  return { messages, close: () => ws.close() };
}

const HOST = 'inspect.example.com';
const CLI = new URL('../../bin/ingress-actors', import.meta.url).pathname;
let testApi: TestApi;
let backend: Backend;
let dir: string;

beforeAll(async () => {
  backend = await startBackend('app');
  testApi = await startTestApi('ia-inspect-', {
    seed: [
      ingressClass(),
      ...serviceWithEndpoints('app', [{ port: backend.port }]),
      ingress('app', { [HOST]: [{ path: '/', service: 'app' }] }),
    ] as never,
  });
  dir = testApi.dir;
});
afterAll(async () => {
  await testApi?.close();
  await backend?.close();
});

async function controllerFlags(name: string): Promise<{ argv: string[]; httpPort: number }> {
  const { flags, httpPort } = await testControllerFlags(join(dir, 'kubeconfig'), join(dir, name));
  const argv = [...flags, '--sync-rate-limit', '10', '--shutdown-timeout', '5'];
  return { argv, httpPort };
}

describe('the inspector relay, in process', () => {
  let inspector: Inspector;
  let controller: Controller;
  let early: Awaited<ReturnType<typeof viewer>>;
  const created = new Map<string, string>(); // sessionId → actor id, as xstate itself reports them
  let httpPort: number;

  beforeAll(async () => {
    // A short history, so the late viewer below depends on the live-actor replay, not on the backlog.
    inspector = await startInspector({ port: 0, history: 50 });
    early = await viewer(inspector.wsUrl);
    const flags = await controllerFlags('in-process');
    httpPort = flags.httpPort;
    const parsed = parseControllerFlags(['--inspect', ...flags.argv]);
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
  });

  it('sends an @xstate.actor message for every actor xstate created, with its name', async () => {
    // The root has no id of its own: the inspector names it after its machine.
    const nameOf = (sessionId: string, id: string) => (sessionId === controller.root.sessionId ? 'rootSupervisor' : id);
    const announcements = () => early.messages.filter((m) => m.type === '@xstate.actor');
    await waitFor('every actor announced over the socket', () => announcements().length >= created.size, 5000);
    const announced = new Map(announcements().map((m) => [m.sessionId, m.name]));
    const names = new Set(announced.values());
    // An actor invoked again at the same place (a sync run, a reload) is shown under the first one's sessionId
    // (src/inspect.ts, ActorSlots).
    for (const [sessionId, id] of created) {
      expect(names, id).toContain(nameOf(sessionId, id));
      if (announced.has(sessionId)) expect(announced.get(sessionId), id).toBe(nameOf(sessionId, id));
    }
    for (const sessionId of announced.keys()) expect(created.has(sessionId), sessionId).toBe(true);
    const expected = [
      'rootSupervisor',
      ...ALL_KINDS.map((k) => `watcher.${k}`),
      'template',
      'syncQueue',
      'nginx',
      'master',
      'watchTemplate',
      'loadTemplate',
      'runSync',
      'reload',
    ];
    for (const name of expected) expect(names, name).toContain(name);
    // One list-watch per watcher (xstate names an invocation without id after its state).
    expect([...created.values()].filter((id) => id.includes('resourceWatcher.running'))).toHaveLength(ALL_KINDS.length);
  });

  it("sends every machine's state as snapshots, and the events between actors", async () => {
    const idOf = (name: string) => early.messages.find((m) => m.type === '@xstate.actor' && m.name === name)!.sessionId;
    const lastValue = (name: string) =>
      early.messages.filter((m) => m.type === '@xstate.snapshot' && m.sessionId === idOf(name)).at(-1)?.snapshot?.value;
    await waitFor(
      'steady states over the socket',
      () => JSON.stringify(lastValue('nginx')) === '{"alive":"running"}' && queueIdle(lastValue('syncQueue')),
      5000,
    );
    expect(lastValue('rootSupervisor')).toBe('running');
    expect(lastValue('template')).toBe('ready');
    for (const kind of [...WATCHED_KINDS, 'Namespace'])
      expect(lastValue(`watcher.${kind}`), kind).toEqual({ running: 'watching' });
    // The Gateway API kinds have no CRD in this API server: their watchers show it.
    for (const kind of UNSERVED) expect(lastValue(`watcher.${kind}`), kind).toBe('unserved');
    const received = (to: string, type: string, from?: string) =>
      early.messages.some(
        (m) =>
          m.type === '@xstate.event' &&
          m.sessionId === idOf(to) &&
          m.event?.type === type &&
          (from === undefined || m.sourceId === idOf(from)),
      );
    for (const kind of WATCHED_KINDS)
      expect(
        received(`watcher.${kind}`, 'watch.synced', `watcher.${kind}`) || received(`watcher.${kind}`, 'watch.synced'),
        kind,
      ).toBe(true);
    expect(received('syncQueue', 'k8s.synced')).toBe(true);
    // Issue 15: what the actors share travels in events, each with its sender.
    expect(received('syncQueue', 'template.changed', 'template')).toBe(true);
    expect(received('template', 'sync.done', 'syncQueue')).toBe(true);
    expect(received('status', 'sync.done', 'syncQueue')).toBe(true);
    expect(received('nginx', 'nginx.started', 'master')).toBe(true);
    // Issue 28: a sync's value goes to nginx from the queue, not from inside the runSync promise.
    expect(received('nginx', 'nginx.reload', 'syncQueue')).toBe(true);
    expect(received('syncQueue', 'xstate.done.actor.runSync', 'runSync')).toBe(true);
  });

  it('brings a late viewer up to date: every live actor and its current state', async () => {
    const late = await viewer(inspector.wsUrl);
    try {
      const live = [
        'rootSupervisor',
        ...ALL_KINDS.map((k) => `watcher.${k}`),
        'template',
        'syncQueue',
        'nginx',
        'master',
      ];
      const idOf = (name: string) =>
        late.messages.find((m) => m.type === '@xstate.actor' && m.name === name)?.sessionId;
      const state = (name: string) =>
        late.messages.filter((m) => m.type === '@xstate.snapshot' && m.sessionId === idOf(name)).at(-1)?.snapshot
          ?.value;
      // The app is served by the first push, which may come before the first config's reload has finished: the
      // replay then shows nginx reloading, and the live snapshots after it bring the viewer to running.
      await waitFor(
        'the replay, then the steady states',
        () =>
          live.every((name) => idOf(name)) &&
          state('rootSupervisor') === 'running' &&
          JSON.stringify(state('nginx')) === '{"alive":"running"}' &&
          queueIdle(state('syncQueue')),
        10_000,
      );
      for (const kind of [...WATCHED_KINDS, 'Namespace'])
        expect(state(`watcher.${kind}`), kind).toEqual({ running: 'watching' });
      for (const kind of UNSERVED) expect(state(`watcher.${kind}`), kind).toBe('unserved');
    } finally {
      late.close();
    }
  });

  it('reports the shutdown, down to the stopped root', async () => {
    controller.stop();
    expect(await controller.exitCode).toBe(0);
    const rootId = controller.root.sessionId;
    await waitFor(
      'the final root snapshot',
      () =>
        early.messages.some(
          (m) =>
            m.type === '@xstate.snapshot' &&
            m.sessionId === rootId &&
            m.snapshot?.value === 'stopped' &&
            m.snapshot.status === 'done',
        ),
      5000,
    );
    const nginxId = early.messages.find((m) => m.type === '@xstate.actor' && m.name === 'nginx')!.sessionId;
    expect(
      early.messages.some(
        (m) =>
          m.type === '@xstate.event' &&
          m.sessionId === nginxId &&
          m.event?.type === 'nginx.stop' &&
          m.sourceId === rootId,
      ),
    ).toBe(true);
  });
});

/** upgrade tries a WebSocket handshake with these headers: `open`, or the HTTP status it was refused with. */
function upgrade(url: string, headers: Record<string, string>): Promise<number | 'open'> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers });
    socket.once('open', () => {
      socket.close();
      resolve('open');
    });
    socket.once('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      res.resume();
    });
    socket.once('error', (error) => reject(error));
  });
}

/** listeners reads /proc/net/tcp{,6}: the local addresses (hex, as the kernel prints them) listening on `port`. */
async function listeners(port: number): Promise<string[]> {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const found: string[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const lines = (await readFile(file, 'utf8').catch(() => '')).split('\n').slice(1);
    for (const line of lines) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (state === '0A' && local?.endsWith(`:${hexPort}`)) found.push(local.slice(0, -5));
    }
  }
  return found;
}

describe('finding 9: the inspector relay only lets its own page in', () => {
  it.each([
    ['no Origin (not a browser: the controller, a CLI viewer)', undefined, '127.0.0.1:8080', true],
    ['its own page on 127.0.0.1', 'http://127.0.0.1:8080', '127.0.0.1:8080', true],
    ['its own page on localhost', 'http://localhost:8080', 'localhost:8080', true],
    ['its own page on [::1]', 'http://[::1]:8080', '[::1]:8080', true],
    ['its page through kubectl port-forward 9000:8080', 'http://127.0.0.1:9000', '127.0.0.1:9000', true],
    ['another site', 'https://evil.example', '127.0.0.1:8080', false],
    ['a DNS-rebinding page (its Host is no loopback name)', 'http://evil.example:8080', 'evil.example:8080', false],
    ['another local page, on another port', 'http://localhost:3000', 'localhost:8080', false],
    ['https on the same host and port', 'https://127.0.0.1:8080', '127.0.0.1:8080', false],
    ['the opaque origin of a sandboxed page or file://', 'null', '127.0.0.1:8080', false],
    ['an Origin with a path stuck on', 'http://127.0.0.1:8080/x', '127.0.0.1:8080', false],
  ] as const)('%s: allowed %s', (_what, origin, host, allowed) => {
    expect(originAllowed(origin, host)).toBe(allowed);
  });

  it('allows an Origin from the allow-list, exactly', () => {
    expect(originAllowed('https://stately.ai', '127.0.0.1:8080', ['https://stately.ai'])).toBe(true);
    expect(originAllowed('https://stately.ai.evil.example', '127.0.0.1:8080', ['https://stately.ai'])).toBe(false);
  });

  it(
    'refuses a WebSocket from another site (403), lets its own page and non-browser clients in, and listens on ' +
      '127.0.0.1 only',
    async () => {
      const inspector = await startInspector({ port: 0 });
      try {
        const { port, hostname } = new URL(inspector.wsUrl);
        expect(hostname).toBe('127.0.0.1');
        expect(await listeners(Number(port))).toEqual(['0100007F']); // 127.0.0.1, nothing else
        expect(await upgrade(inspector.wsUrl, { origin: 'https://evil.example' })).toBe(403);
        expect(
          await upgrade(inspector.wsUrl, { origin: `http://evil.example:${port}`, host: `evil.example:${port}` }),
        ).toBe(403);
        expect(await upgrade(inspector.wsUrl, { origin: `http://127.0.0.1:${port}` })).toBe('open');
        expect(await upgrade(inspector.wsUrl, { origin: `http://localhost:${port}`, host: `localhost:${port}` })).toBe(
          'open',
        );
        expect(await upgrade(inspector.wsUrl, {})).toBe('open');
      } finally {
        await inspector.close();
      }
    },
  );
});

describe('ingress-actors controller --inspect', () => {
  it('serves the inspector page and relays every actor of the real process, then exits 0 on SIGTERM', async () => {
    const inspectPort = await freePort();
    const { argv, httpPort } = await controllerFlags('cli');
    const child = execa(
      CLI,
      ['controller', '--inspect', '--inspect-port', String(inspectPort), ...argv, '--log-level', 'info'],
      { reject: false },
    );
    try {
      const client = await viewer(`ws://127.0.0.1:${inspectPort}`);
      await waitFor(
        'the app served',
        async () => (await get({ host: HOST, path: '/', port: httpPort })).backend === 'app',
        20_000,
      );
      const page = await get({ host: '127.0.0.1', path: '/', port: inspectPort });
      expect(page.status).toBe(200);
      expect(page.body).toContain('https://stately.ai/inspect');
      const names = () => new Set(client.messages.filter((m) => m.type === '@xstate.actor').map((m) => m.name));
      const expected = [
        'rootSupervisor',
        ...ALL_KINDS.map((k) => `watcher.${k}`),
        'template',
        'syncQueue',
        'nginx',
        'master',
      ];
      await waitFor(
        'every supervised actor over the socket',
        () => expected.every((name) => names().has(name)),
        10_000,
      );
      child.kill('SIGTERM');
      const result = await child;
      expect(result.exitCode).toBe(0);
      expect(result.stderr).toContain(`http://127.0.0.1:${inspectPort}/`);
      expect(result.stderr).not.toMatch(/--inspect is not implemented/);
      expect(client.messages.some((m) => m.type === '@xstate.snapshot' && m.snapshot?.value === 'stopped')).toBe(true);
      client.close();
    } finally {
      child.kill('SIGKILL');
    }
  }, 60_000);
});
