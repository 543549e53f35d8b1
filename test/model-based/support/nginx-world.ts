/**
 * The world of the nginx-process machine: the machine the controller runs, given the controller's
 * own effects (src/actors/nginx.ts: spawn in a process group, stage + `nginx -t` + SIGHUP, drain
 * the orphans), over a real nginx on a loopback port. Each model event is made to happen for real:
 * kill -9 of the master, SIGQUIT by `nginx.stop`, a config broken while `nginx -t` is held, a
 * binary that cannot be spawned, an in-flight request that keeps a graceful quit or a drain busy,
 * the HTTP port held by another listener when the first master binds it (nginx's own `[emerg]
 * bind()` ends it: `failed`).
 *
 * The tables go over the real control channel to nginx's Lua control server (the controller's `push` and the
 * reload's push): nginx takes them, refuses one over its body size (413), answers none in time (a Lua hook holds the
 * request while a file exists), or cannot be reached (its socket moved away); a master killed mid-push too.
 *
 * Three transitions have no real cause with these effects, so a fault is injected at the actor
 * boundary (INJECTED below); everything else the actor sees comes from real processes.
 */
import { chmod, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { expect } from 'vitest';
import {
  createActor,
  fromCallback,
  fromPromise,
  type Actor,
  type AnyEventObject,
  type AnyMachineSnapshot,
  type EventObject,
} from 'xstate';
import type { NginxMasterCommand, PushedTables } from '../../../machines/events.js';
import type { DrainInput, MasterInput } from '../../../machines/nginxEffects.js';
import {
  nginxProcessMachine,
  type NginxProcessContext,
  type NginxProcessInput,
} from '../../../machines/nginxProcess.machine.js';
import { nginxActors } from '../../../src/actors/nginx.js';
import { CONTROL_TOKEN_ENV } from '../../../src/nginx/control.js';
import type { DynamicTables } from '../../../src/model/pushed-tables.js';
import type { LuaSettings } from '../../../src/model/machine-settings.js';
import { ControlChannel, newControlToken } from '../../../src/nginx/control.js';
import { luaSettingsIn } from '../../support/nginx.js';
import { ConfigFolder } from '../../../src/nginx/apply.js';
import { liveGroupMembers, signalGroup } from '../../../src/nginx/master.js';
import { isListening } from '../../../src/nginx/probe.js';
import { writeConfigSet } from '../../../src/nginx/files.js';
import { waitFor } from '../../support/cluster.js';
import { freePort, get } from '../../support/net.js';
import { microstepRecorder, type RealStep, type StepContext, type World } from '../runner.js';
import { alive, gatedNginx, holdRequest, type GatedNginx, type HoldingBackend, type InFlight } from './processes.js';

/** NGINX_INPUT is the machine's input in this world: short, but long enough to see every state. */
export const NGINX_INPUT: NginxProcessInput = {
  shutdownTimeoutMs: 1200,
  drainTimeoutMs: 8000,
  backoffBaseMs: 400,
  backoffMaxMs: 800,
  // Soon after every start, so it is over before a path does anything slow (it fires on its own).
  stableAfterMs: 1000,
  // Later than any step a path takes after a failed reload, except the retry it waits for.
  reloadRetryMs: 2500,
  // The same for a failed push.
  pushRetryMs: 2500,
};

/** PUSH_TIMEOUT_MS is how long the world's control channel waits for nginx's answer to a push. */
const PUSH_TIMEOUT_MS = 1000;
/** CONTROL_BODY_LIMIT is the world's control server's client_max_body_size: the `big` tables are over it. */
const CONTROL_BODY_LIMIT = 4096;

/**
 * Tables are symbols too: `t1`, `t2` (one backend; an endpoint change between them) and `big` (a tenant's objects
 * that make the backend table larger than nginx takes: it answers 413). Only the backends' version differs.
 */
export const symbolicTables = (symbol: string): PushedTables => ({
  backends: { version: symbol },
  certificates: { version: 'c0' },
  routes: { version: 'r0' },
});

/** realTables are the tables a symbol stands for, as the controller would push them. */
function realTables(symbol: string, port: number): DynamicTables {
  const backend = (name: string) => ({
    name,
    balance: 'round_robin' as const,
    hashKey: null,
    endpoints: [{ address: '127.0.0.1', port: symbol === 't2' ? port + 1 : port }],
  });
  const count = symbol === 'big' ? 100 : 1;
  return {
    backends: {
      version: symbol,
      backends: Array.from({ length: count }, (_, i) => backend(i === 0 ? 'default_app_80' : `tenant_big_${i}_80`)),
    },
    certificates: { version: 'c0', certificates: [] },
    routes: { version: 'r0', servers: [] },
  };
}

/**
 * heldWithoutAnswer is what nginx holds, as src/actors/nginx.ts's pushTables says, after a push of the tables
 * `symbol` got no answer for the backends (the table that differs): unknown, or none at all when it held none.
 */
const heldWithoutAnswer = (pushed: PushedTables | null, symbol: string) =>
  pushed === null ? null : { ...pushed, backends: { version: `unknown:${symbol}` } };

const id = (path: string) => `nginxProcess.${path}`;
const after = (delay: string, state: string) => `xstate.after.${delay}.${id(state)}`;

/** E are the model's events; configs are symbols, `conf-1` and `conf-2`, which the world renders. */
export const E = {
  started: { type: 'nginx.started', pid: 1 },
  exited: { type: 'nginx.exited', code: null, signal: 'SIGKILL' },
  // What the master actor reports when nginx could not bind the HTTP port (src/actors/nginx.ts portInUse).
  exitedPortInUse: { type: 'nginx.exited', code: 1, signal: null, fatal: 'port in use' },
  stop: { type: 'nginx.stop' },
  reload: (config: string) => ({ type: 'nginx.reload', config, files: [] }),
  reloadDone: { type: 'xstate.done.actor.reload' },
  reloadFailed: { type: 'xstate.error.actor.reload', error: 'nginx -t failed' },
  masterFailed: { type: 'xstate.error.actor.master', error: 'master failed' },
  drainDone: { type: 'xstate.done.actor.drain' },
  drainFailed: { type: 'xstate.error.actor.drain', error: 'drain failed' },
  stable: { type: after('stableAfter', 'alive') },
  quitTimeout: { type: after('shutdownTimeout', 'alive.stopping.quitting') },
  killTimeout: { type: after('shutdownTimeout', 'alive.stopping.killing') },
  backoff: { type: after('restartBackoff', 'restarting') },
  retry: { type: after('reloadRetry', 'alive.running') },
  // A sync whose nginx.conf is the one the sync queue handed, with other tables: a push over the control channel, no
  // reload (`config` names the config they go with, for the scenarios' reading; the event carries none).
  tablesOnly: (_config: string, tables = 't1') => ({ type: 'nginx.push', tables: symbolicTables(tables) }),
  // Another nginx.conf and tables: the reload pushes them (their union with what nginx holds) before it signals.
  reloadWith: (config: string, tables: string) => ({
    type: 'nginx.reload',
    config,
    files: [],
    tables: symbolicTables(tables),
  }),
  pushDone: { type: 'xstate.done.actor.push' },
  // nginx answered 413 (the `big` tables): it holds what it held.
  pushRefused: (pushed: PushedTables | null) => ({
    type: 'xstate.error.actor.push',
    error: { message: 'nginx answered 413', held: pushed },
  }),
  // No answer within PUSH_TIMEOUT_MS (the Lua hook holds the request): nginx may have taken the backends or not.
  pushTimedOut: (pushed: PushedTables | null, symbol: string) => ({
    type: 'xstate.error.actor.push',
    error: { message: 'no answer', held: heldWithoutAnswer(pushed, symbol) },
  }),
  // The control socket is not there (ENOENT): counted as no answer too.
  pushUnreachable: (pushed: PushedTables | null, symbol: string) => ({
    type: 'xstate.error.actor.push',
    error: { message: 'unreachable', held: heldWithoutAnswer(pushed, symbol) },
  }),
  pushRetry: { type: after('pushRetry', 'alive.running') },
} satisfies Record<string, AnyEventObject | ((...args: never[]) => AnyEventObject)>;

/** PushVerdict is how the world makes nginx answer a push: take it, time out, or be unreachable. */
type PushVerdict = 'timeout' | 'unreachable';
const verdictOf = (event: AnyEventObject): PushVerdict | null => {
  const message = (event as { error?: { message?: string } }).error?.message;
  return message === 'no answer' ? 'timeout' : message === 'unreachable' ? 'unreachable' : null;
};

/**
 * INJECTED are the transitions only an injected fault produces here, and why no real action can.
 */
export const INJECTED: Readonly<Record<string, string>> = {
  [`${id('alive')} | xstate.error.actor.master #0`]: 'the master actor can fail only at spawn, never while stopping',
  [`${id('alive.stopping.killing')} | ${E.killTimeout.type} #0`]:
    'SIGKILL of the group is always reported as the master exit',
  [`${id('draining')} | xstate.error.actor.drain #0`]: 'drainOrphans does not reject',
};

const cfg = (set: { config: string } | null) => set?.config ?? null;

const other = (config: string | null) => (config === 'conf-1' ? 'conf-2' : 'conf-1');

/** nginxEvents lists the events the world can make happen in a model state. */
export function nginxEvents(snapshot: AnyMachineSnapshot): AnyEventObject[] {
  const c = snapshot.context as NginxProcessContext;
  const m = (v: string) => snapshot.matches(v as never);
  // One config queued at most, so the graph stays small; queueing twice is the same transition.
  const queue = cfg(c.pending) === null ? [E.reload(other(cfg(c.reloading) ?? cfg(c.applied)))] : [];
  // Only a master that never served gives up on a port in use (later, it is restarted as any crash).
  if (m('alive.starting'))
    return [E.started, E.exited, E.stop, E.masterFailed, ...(c.everStarted ? [] : [E.exitedPortInUse])];
  if (m('alive.running')) {
    const retry = cfg(c.failed) ? [E.retry] : []; // a failed config is tried again after reloadRetryMs
    // One tables-only change per path at most, so the graph stays small (the scenarios change them more).
    const tables = c.applied && c.tables === null && !cfg(c.failed) ? [E.tablesOnly(c.applied.config)] : [];
    // A failed push is tried again after pushRetryMs, while nginx lacks the tables.
    const lacking = c.tables !== null && c.tables.backends.version !== c.pushed?.backends.version;
    const pushRetry = lacking && c.pushFailuresInRow > 0 ? [E.pushRetry] : [];
    return [
      E.reload(other(cfg(c.applied))),
      ...(c.applied ? [E.reload(c.applied.config)] : []),
      ...tables,
      ...pushRetry,
      E.exited,
      E.stop,
      E.stable,
      ...retry,
    ];
  }
  // nginx refuses the `big` tables whatever happens; any other it takes, unless it does not answer in time or
  // cannot be reached. The master may die mid-push.
  if (m('alive.pushing'))
    return c.tables?.backends.version === 'big'
      ? [E.pushRefused(c.pushed), E.exited]
      : [
          E.pushDone,
          E.pushTimedOut(c.pushed, c.tables!.backends.version),
          E.pushUnreachable(c.pushed, c.tables!.backends.version),
          E.exited,
        ];
  if (m('alive.reloading')) return [E.reloadDone, E.reloadFailed, E.exited, E.stop, ...queue];
  // Stopped before it served, nginx has nothing to finish: it quits at once.
  if (m('alive.stopping.quitting'))
    return c.pid === null ? [E.exited] : [E.exited, E.quitTimeout, E.stop, E.masterFailed];
  if (m('alive.stopping.killing')) return [E.exited, E.killTimeout];
  // A master that died before it served leaves no group to drain: draining ends at once then.
  if (m('draining'))
    return c.lastExit?.pid === null ? [E.drainDone, E.drainFailed] : [E.drainDone, E.drainFailed, E.stop, ...queue];
  if (m('restarting')) return [E.backoff, E.stop, ...queue];
  return [];
}

/** nginxKey is the part of a snapshot that decides what happens next. */
export function nginxKey(snapshot: AnyMachineSnapshot): unknown {
  const c = snapshot.context as NginxProcessContext;
  return [
    snapshot.value,
    cfg(c.applied),
    cfg(c.pending),
    cfg(c.reloading),
    cfg(c.failed),
    c.stopRequested,
    c.killed,
    c.pid === null,
    c.lastExit?.pid === null,
    c.everStarted,
    c.tables?.backends.version ?? null,
    c.pushed?.backends.version ?? null,
    c.failedTables !== null,
    c.pushFailuresInRow > 0,
  ];
}

const MARK = (config: string | null) => `served ${config ?? 'boot'}`;

/** WorldLua is what the world's nginx.conf needs for the control server: the Lua settings and the hold file. */
interface WorldLua {
  readonly settings: LuaSettings;
  /** while this file exists, the control server holds a push of the backends (unanswered) */
  readonly holdFile: string;
}

function configText(config: string | null, port: number, backend: number, lua: WorldLua): string {
  const q = JSON.stringify;
  return `# ${config ?? 'boot'}
${lua.settings.modules.map((m) => `load_module ${q(m)};`).join('\n')}
env ${CONTROL_TOKEN_ENV};
worker_processes 1;
pid nginx.pid;
error_log stderr notice;
events { worker_connections 64; }
http {
    lua_package_path ${q(lua.settings.packagePath)};
    lua_shared_dict ia_config 8m;
    lua_shared_dict ia_sticky 1m;
    init_by_lua_block { require("ingress_actors.init").master() }
    server {
        listen ${q(`unix:${lua.settings.controlSocket}`)};
        access_log off;
        client_max_body_size ${CONTROL_BODY_LIMIT};
        client_body_buffer_size ${CONTROL_BODY_LIMIT};
        client_body_in_single_buffer on;
        location = /backends {
            access_by_lua_block {
                local f = io.open(${q(lua.holdFile)})
                while f do f:close(); ngx.sleep(0.05); f = io.open(${q(lua.holdFile)}) end
            }
            content_by_lua_block { require("ingress_actors.control").backends() }
        }
        location = /certificates { content_by_lua_block { require("ingress_actors.control").certificates() } }
        location = /routes { content_by_lua_block { require("ingress_actors.control").routes() } }
        location = /status { content_by_lua_block { require("ingress_actors.control").status() } }
    }
    client_body_temp_path tmp/client-body;
    proxy_temp_path tmp/proxy;
    fastcgi_temp_path tmp/fastcgi;
    uwsgi_temp_path tmp/uwsgi;
    scgi_temp_path tmp/scgi;
    access_log off;
    server {
        listen 127.0.0.1:${port};
        location = / { return 200 "${MARK(config)}\\n"; }
        location /hold { proxy_pass http://127.0.0.1:${backend}; proxy_read_timeout 60s; }
    }
}
`;
}

/** Faults are the injected ones: set before the step that would otherwise not produce them. */
interface Faults {
  swallowExit: boolean;
  failDrain: boolean;
  /** the next spawn fails as one restarting may cure (EAGAIN: no process slot); a binary gone is fatal instead */
  failSpawn: boolean;
}

/** faultyMaster is the real `master` actor, able to fail (on `test.fail`) or to miss one exit report. */
function faultyMaster(real: ReturnType<typeof nginxActors>['master'], faults: Faults) {
  const callback = (real as unknown as { config: (args: object) => (() => void) | undefined }).config;
  // Typed as the real one: `test.fail` is the test's own command, sent from outside the machine.
  return fromCallback<NginxMasterCommand, MasterInput>((args) => {
    if (faults.failSpawn) {
      faults.failSpawn = false;
      throw Object.assign(new Error('spawn nginx EAGAIN (injected)'), { code: 'EAGAIN' });
    }
    let forward: ((command: NginxMasterCommand) => void) | undefined;
    let failed = false; // a failed actor reports nothing more
    const cleanup = callback({
      ...args,
      sendBack: (event: AnyEventObject) => {
        if (event.type === 'nginx.exited' && faults.swallowExit) return void (faults.swallowExit = false);
        if (!failed) args.sendBack(event);
      },
      receive: (listener: (command: NginxMasterCommand) => void) => (forward = listener),
    });
    args.receive((command) => {
      if ((command as EventObject).type === 'test.fail')
        throw ((failed = true), new Error('the master actor failed (injected)'));
      forward?.(command as NginxMasterCommand);
    });
    return cleanup ?? undefined;
  });
}

/** startNginxWorld prepares a world for one path: its own folder, port, stand-in binary and actor (not started). */
export async function startNginxWorld(backend: HoldingBackend): Promise<World> {
  const dir = await mkdtemp(join(tmpdir(), 'ia-model-nginx-'));
  const conf = join(dir, 'conf');
  const gates: GatedNginx = await gatedNginx(dir, ['hold-start', 'hold-test']);
  const port = await freePort();
  await writeConfigSet(conf, '', []);
  // The workers (nobody) look for the hold file in it.
  await chmod(dir, 0o755);
  await chmod(conf, 0o755);
  const lua: WorldLua = { settings: await luaSettingsIn(conf), holdFile: join(conf, 'hold-push') };
  const token = newControlToken();
  const channel = new ControlChannel(lua.settings.controlSocket, token, PUSH_TIMEOUT_MS);
  const text = (config: string | null) => configText(config, port, backend.port, lua);
  await writeConfigSet(conf, text(null), []);
  const log: RealStep[] = [];
  const faults: Faults = { swallowExit: false, failDrain: false, failSpawn: false };
  const folder = new ConfigFolder(gates.binary, conf);
  const real = nginxActors({
    binary: gates.binary,
    dir: conf,
    httpPort: port,
    folder,
    log: pino({ level: 'silent' }),
    startTimeoutMs: 15_000,
    control: { channel, env: { [CONTROL_TOKEN_ENV]: token }, socket: lua.settings.controlSocket },
  });
  let squatter: Server | null = null; // another process's listener on the HTTP port
  const drain = fromPromise<void, DrainInput>(async (args) => {
    await (real.drain as unknown as { config: (a: typeof args) => Promise<void> }).config(args);
    if (faults.failDrain) throw ((faults.failDrain = false), new Error('the drain failed (injected)'));
  });
  const logic = nginxProcessMachine.provide({
    actors: { master: faultyMaster(real.master, faults), reload: real.reload, drain, push: real.push },
  });
  const actor: Actor<typeof logic> = createActor(logic, { input: NGINX_INPUT, inspect: microstepRecorder(log) });
  const initial = actor.getSnapshot();
  const groups = new Set<number>(); // every master pid (= process group) this world started
  let inFlight: InFlight | null = null;
  const staleTests: number[] = []; // `nginx -t` runs whose reload was abandoned: never released

  const ctx = () => actor.getSnapshot().context;
  const serves = async () => {
    const reply = await get({ host: 'model.example.com', path: '/', port });
    return String(reply.headers.server).startsWith('nginx') ? reply.body.trim() : `not nginx: ${reply.body}`;
  };
  // After a reload the old workers may take a connection or two before they stop accepting.
  const servesSteadily = async (mark: string) => {
    for (let i = 0; i < 5; i++) if ((await serves()) !== mark) return false;
    return true;
  };
  const holdOne = async () => (inFlight = await holdRequest(port, backend));
  const rememberMasters = async () => {
    for (const pid of await gates.waiting('start')) groups.add(pid);
    if (ctx().pid !== null) groups.add(ctx().pid!);
  };
  const noneLeft = () => [...groups].every((pid) => liveGroupMembers(pid).length === 0);
  const freshTests = async () => (await gates.waiting('test')).filter((pid) => !staleTests.includes(pid));

  // Look ahead: what makes the next event happen must be in place before this step's action.
  const awaySocket = `${lua.settings.controlSocket}.away`;
  const holdPushes = (on: boolean) => (on ? writeFile(lua.holdFile, '') : rm(lua.holdFile, { force: true }));
  const pushOver = () =>
    waitFor('the push to end', async () => !actor.getSnapshot().matches('alive.pushing' as never), 5000);
  const prepare = async ({ step, next }: StepContext) => {
    // the spawn this step leads to fails
    if (next?.event.type === E.masterFailed.type && step.state.matches('alive.starting' as never))
      faults.failSpawn = true;
    // The push this step starts gets no answer (held until the channel gives up, or the master dies), or finds no
    // socket: set up before the step's action, which starts it.
    if (next && step.state.matches('alive.pushing' as never)) {
      if (verdictOf(next.event) === 'timeout' || next.event.type === E.exited.type) await holdPushes(true);
      if (verdictOf(next.event) === 'unreachable') await rename(lua.settings.controlSocket, awaySocket);
    }
    if (next?.event.type === E.killTimeout.type) faults.swallowExit = true;
    if (next?.event.type === E.drainFailed.type) faults.failDrain = true;
  };

  return {
    log,
    ambient: new Set([`${id('alive')} | ${E.stable.type} #0`]),
    snapshot: () => actor.getSnapshot() as AnyMachineSnapshot,
    initial: () => initial as AnyMachineSnapshot,
    project: (snapshot, side) => {
      const c = snapshot.context as NginxProcessContext;
      const symbol = (config: string | null) =>
        side === 'model' || config === null
          ? config
          : (['conf-1', 'conf-2'].find((s) => text(s) === config) ?? `?${config.slice(0, 20)}`);
      return {
        applied: symbol(cfg(c.applied)),
        pending: symbol(cfg(c.pending)),
        reloading: symbol(cfg(c.reloading)),
        retry: symbol(cfg(c.failed) ?? null),
        ok: c.reloadsOk,
        failed: c.reloadsFailed,
        skipped: c.reloadsSkipped,
        restarts: c.restarts,
        stopRequested: c.stopRequested,
        killed: c.killed,
        exitPid: c.lastExit === null ? 'none' : c.lastExit.pid === null ? 'null' : 'pid',
        everStarted: c.everStarted,
        startFailure: c.startFailure !== null,
        tables: c.tables?.backends.version ?? null,
        pushed: c.pushed?.backends.version ?? null,
        failedTables: c.failedTables?.backends.version ?? null,
        pushFailuresInRow: c.pushFailuresInRow,
        lastPushError: c.lastPushError !== null,
        pushesOk: c.pushesOk,
        pushesFailed: c.pushesFailed,
      };
    },

    async exec(at) {
      const event = at.step.event;
      const from = at.previous?.state;
      await prepare(at);
      if (event.type === 'xstate.init') return void actor.start();
      // From alive.starting the spawn failed already (prepare); elsewhere the running master actor fails.
      if (event.type === E.masterFailed.type && !from?.matches('alive.starting' as never)) {
        actor.getSnapshot().children.master?.send({ type: 'test.fail' }); // INJECTED
      }
      if (event.type === E.started.type) await gates.release('start');
      const portInUse = 'fatal' in event;
      if (portInUse) {
        // The port is taken before the held master runs nginx, which then cannot bind it.
        squatter = createServer();
        await new Promise<void>((resolve, reject) =>
          squatter!.once('error', reject).listen(port, '127.0.0.1', resolve),
        );
        await gates.release('start'); // nginx itself exits: nothing to kill
      } else if (event.type === E.exited.type && from?.matches('alive.starting' as never)) {
        for (const pid of await gates.waiting('start')) process.kill(pid, 'SIGKILL');
      } else if (event.type === E.exited.type && from?.matches('alive.stopping.quitting' as never)) {
        backend.release(); // the request in flight ends, so the graceful quit does
      } else if (event.type === E.exited.type && !from?.matches('alive.stopping' as never)) {
        await holdOne(); // the orphaned worker keeps it, so draining lasts until released
        staleTests.push(...(await gates.waiting('test')));
        process.kill(ctx().pid!, 'SIGKILL');
        await holdPushes(false); // a push held in the orphan ends
      }
      if (event.type === E.stop.type) {
        if (from?.matches('alive.running' as never) || from?.matches('alive.reloading' as never)) await holdOne();
        if (from?.matches('alive.reloading' as never)) staleTests.push(...(await gates.waiting('test')));
        actor.send({ type: 'nginx.stop' });
      }
      if (event.type === 'nginx.push') {
        const tables = (event as unknown as { tables: PushedTables }).tables;
        actor.send({ type: 'nginx.push', tables: realTables(tables.backends.version, backend.port) });
      }
      if (event.type === 'nginx.reload') {
        const tables = (event as unknown as { tables?: PushedTables }).tables;
        const config = text((event as unknown as { config: string }).config);
        const real = tables ? { tables: realTables(tables.backends.version, backend.port) } : {};
        actor.send({ type: 'nginx.reload', config, files: [], ...real });
      }
      // A push held or sent nowhere: once the channel gave up, nginx answers again and the socket is back.
      if (verdictOf(event) === 'timeout') await pushOver().finally(() => holdPushes(false));
      if (verdictOf(event) === 'unreachable')
        await pushOver().finally(() => rename(awaySocket, lua.settings.controlSocket));
      if (event.type === E.reloadDone.type || event.type === E.reloadFailed.type) {
        const tests = await waitFor<number[] | false>(
          'the nginx -t of this reload',
          async () => ((await freshTests()).length ? freshTests() : false),
          5000,
        );
        if (event.type === E.reloadFailed.type)
          await writeFile(join(conf, 'nginx.conf.next'), 'this is not an nginx config;\n');
        await gates.release('test', tests || []);
      }
      if (event.type === E.drainDone.type || event.type === E.drainFailed.type) backend.release();
      // Timers (after …) need nothing: waiting for the transition is the action.
      await rememberMasters();
    },

    async check({ step }, current) {
      const model = step.state;
      const c = model.context as NginxProcessContext;
      await rememberMasters();
      if (model.matches('alive.running' as never)) {
        await waitFor(`nginx serving ${MARK(cfg(c.applied))}`, () => servesSteadily(MARK(cfg(c.applied))), 3000);
        expect(alive(ctx().pid!)).toBe(true);
        // nginx itself holds the tables the machine says it holds (unless a push got no answer: then unknown).
        const held = c.pushed?.backends.version;
        if (current && held !== undefined && !held.startsWith('unknown:'))
          expect((await channel.status()).backends).toBe(held);
      } else if (model.matches('alive.reloading' as never) && current) {
        await waitFor('the nginx -t of the reload, held', async () => (await freshTests()).length === 1, 3000);
        // The config under test is not in yet: nginx settles on the applied one. Configs alternate
        // between two symbols, so an old worker of the reload before last may answer with the very
        // symbol under test for a moment; that is why this waits for steady answers first.
        await waitFor(
          `nginx serving ${MARK(cfg(c.applied))} while the reload is held`,
          () => servesSteadily(MARK(cfg(c.applied))),
          3000,
        );
        const answer = await serves();
        expect(answer).toMatch(/^served /);
        expect(answer).not.toBe(MARK(cfg(c.reloading)));
      } else if (model.matches('alive.starting' as never) && current) {
        await waitFor(
          'the new master, held before it runs nginx',
          async () => (await gates.waiting('start')).length === 1,
          3000,
        );
        expect(await isListening(port)).toBe(false);
      } else if (model.matches('alive.stopping.quitting' as never) && current && inFlight && !inFlight.settled()) {
        expect(alive(ctx().pid!)).toBe(true);
        await waitFor('nginx to stop accepting connections', async () => !(await isListening(port)), 2000);
      } else if (model.matches('alive.stopping.killing' as never)) {
        if (inFlight) expect(await inFlight.done).toBeInstanceOf(Error); // cut by SIGKILL
        await waitFor('the killed group gone', noneLeft, 2000);
      } else if (model.matches('draining' as never) && current) {
        const dead = ctx().lastExit?.pid ?? null;
        if (dead !== null) expect(alive(dead)).toBe(false);
        expect(await gates.waiting('start')).toEqual([]);
        // The port answers only while the dead master's workers still serve.
        const orphans = dead === null ? [] : liveGroupMembers(dead);
        if (await isListening(port)) expect(orphans.length).toBeGreaterThan(0);
        if (dead !== null) expect(inFlight?.settled()).toBe(false); // an orphan still serves it
      } else if (model.matches('restarting' as never) && current) {
        await waitFor('every old nginx process gone', noneLeft, 1000);
        expect(await isListening(port)).toBe(false);
      } else if (model.matches('failed' as never)) {
        await waitFor('the actor to give up', () => actor.getSnapshot().status === 'done', 3000);
        // nginx's own words, turned into the operator's: which port, which flag.
        expect((actor.getSnapshot().output as { error?: string }).error).toContain(
          `port ${port} (--http-port) is in use by another process`,
        );
        expect(actor.getSnapshot().output).toMatchObject({ clean: (model.output as { clean: boolean }).clean });
        await waitFor('no nginx process of this world left', noneLeft, 3000);
        expect(await isListening(port)).toBe(true); // the other process still has it
      } else if (model.matches('stopped' as never)) {
        await waitFor('the stop to finish', () => actor.getSnapshot().status === 'done', 3000);
        expect(actor.getSnapshot().output).toEqual(model.output);
        // After an injected master failure nothing kills nginx; the SIGQUIT it already had ends it.
        if (step.event.type === E.masterFailed.type) backend.release();
        await waitFor('no nginx process of this world left', noneLeft, 3000);
        expect(await isListening(port)).toBe(false);
      }
    },

    async close() {
      if (actor.getSnapshot().status === 'active') actor.stop();
      await holdPushes(false);
      backend.release();
      await rememberMasters().catch(() => undefined);
      for (const pid of groups) signalGroup(pid, 'SIGKILL');
      for (const pid of await gates.waiting('start').catch(() => [])) signalGroup(pid, 'SIGKILL');
      // Held `nginx -t` runs are in this process's group: kill them one by one.
      for (const pid of await gates.waiting('test').catch(() => [])) process.kill(pid, 'SIGKILL');
      await inFlight?.done;
      // The folder's last operation (an abandoned reload's) ends before the folder goes.
      await folder.idle();
      await new Promise((resolve) => (squatter ? squatter.close(resolve) : resolve(undefined)));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
