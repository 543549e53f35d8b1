import { readFileSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fromCallback, fromPromise } from 'xstate';
import type { PushFailure } from '../../machines/applies.js';
import type {
  ApplyTiming,
  NginxConfigSet,
  NginxMasterCommand,
  PushedTables,
  PushResult,
  RefusedEntry,
  ReloadResult,
} from '../../machines/events.js';
import type { DrainInput, MasterInput, PushInput, ReloadInput } from '../../machines/nginxEffects.js';
import { servableIngress, servedProfiles, tablesForReload } from '../model/dynamic-tables.js';
import type {
  BackendTable,
  CertificateTable,
  DynamicTables,
  IngressRouteTable,
  RouteTable,
} from '../model/pushed-tables.js';
import type { Logger } from '../log.js';
import { ConfigFolder, ConfigRefusedError } from '../nginx/apply.js';
import { notRunnable, whyNotRunnable } from '../nginx/binary.js';
import { drainOrphans } from '../nginx/drain.js';
import { spawnMaster, type Master } from '../nginx/master.js';
import { waitForPort } from '../nginx/probe.js';
import { unifiedDiff } from '../nginx/text-diff.js';

const round = (ms: number) => Math.round(ms * 10) / 10;

/** withTiming attaches a failed reload's or push's ApplyTiming to its error, for the machine's record of applies. */
function withTiming(error: unknown, timing: ApplyTiming): Error {
  return Object.assign(error instanceof Error ? error : new Error(String(error)), { timing });
}

async function waitForPidFile(path: string, pid: number, timeoutMs: number, gone: () => boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await readFile(path, 'utf8').catch(() => '')).trim() !== String(pid)) {
    // A master told to quit at once never writes it: polling on would hold the process open for timeoutMs.
    if (gone()) return;
    if (Date.now() > deadline) throw new Error(`nginx did not write its pid ${pid} to ${path} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * portInUse is the operator's reason when a master exited because a port it listens on is held
 * by another process (nginx: `[emerg] bind() to 127.0.0.1:80 failed (98: Address already in use)`),
 * naming the flag of that port; null for any other exit.
 */
export function portInUse(emerg: string | null, ports: { httpPort: number; httpsPort?: number }): string | null {
  if (emerg === null || emerg.length > 4096 || !emerg.includes('Address already in use')) return null;
  const start = emerg.indexOf('bind() to ');
  const end = emerg.indexOf(' failed', start);
  if (start < 0 || end < 0) return null;
  const address = emerg.slice(start + 'bind() to '.length, end);
  const port = Number(address.slice(address.lastIndexOf(':') + 1));
  const flag = port === ports.httpPort ? ' (--http-port)' : port === ports.httpsPort ? ' (--https-port)' : '';
  return (
    `nginx cannot listen on ${address}: port ${port}${flag} is in use by another process; stop it or choose ` +
    'another port'
  );
}

/**
 * TablePusher sends the Lua balancer's tables over the control channel (src/nginx/control.ts's ControlChannel); each
 * push answers with the entries nginx refused (it applied the rest).
 */
export interface TablePusher {
  /** the keyed tables: `held` is what nginx holds (a delta on it is sent), null when unknown (the whole table) */
  pushBackends(table: BackendTable, held: BackendTable | null): Promise<{ readonly refused: readonly RefusedEntry[] }>;
  pushCertificates(
    table: CertificateTable,
    held: CertificateTable | null,
  ): Promise<{ readonly refused: readonly RefusedEntry[] }>;
  pushRoutes(table: RouteTable): Promise<{ readonly refused: readonly RefusedEntry[] }>;
  pushIngressRoutes?(
    table: IngressRouteTable,
    held: IngressRouteTable | null,
  ): Promise<{ readonly refused: readonly RefusedEntry[] }>;
}

/**
 * pushTables sends each table whose version differs from what nginx holds, backends first; resolves to `tables`
 * (nginx holds every version sent, refused entries or not) and the entries nginx refused. When a push fails, the
 * error carries what nginx holds now (`held`, the machine's PushFailure): the tables sent before it, and for the one
 * that failed, the old table if nginx answered (it refuses such a body whole) or a version nothing equals if no
 * answer came (it may have taken it), so that the machine pushes it again. Null when nginx held none.
 */
export async function pushTables(
  control: TablePusher,
  wanted: DynamicTables,
  pushed: PushedTables | null,
  serving: ReadonlySet<string> | null = null,
): Promise<PushResult> {
  const before = pushed as DynamicTables | null;
  // Ingress routes only where the running nginx.conf has their profiles (servableIngress)
  const tables: DynamicTables =
    wanted.ingress && serving
      ? { ...wanted, ingress: servableIngress(wanted.ingress, before?.ingress ?? null, serving) }
      : wanted;
  let held: DynamicTables | null = before;
  const refused: RefusedEntry[] = [];
  const send = async <K extends 'backends' | 'certificates' | 'routes' | 'ingress'>(
    key: K,
    push: (table: DynamicTables[K]) => Promise<{ readonly refused: readonly RefusedEntry[] }>,
  ) => {
    const table = tables[key]!;
    // Ingress routes held back (servableIngress) keep the version asked for: their hosts tell them apart
    const same =
      key === 'ingress'
        ? before?.ingress?.hosts === (table as IngressRouteTable).hosts
        : before?.[key]?.version === table.version;
    if (same) return;
    try {
      refused.push(...(await push(table)).refused);
      if (held) held = { ...held, [key]: table };
    } catch (error) {
      const answered = Number((error as { status?: unknown }).status ?? 0) > 0;
      if (held && !answered) held = { ...held, [key]: { ...table, version: `unknown:${table.version}` } };
      throw Object.assign(error instanceof Error ? error : new Error(String(error)), { held });
    }
  };
  await send('backends', (t) => control.pushBackends(t, before?.backends ?? null));
  await send('certificates', (t) => control.pushCertificates(t, before?.certificates ?? null));
  // Routes last: a route names backends, which are then there.
  await send('routes', (t) => control.pushRoutes(t));
  if (tables.ingress && control.pushIngressRoutes) {
    const pushIngress = control.pushIngressRoutes.bind(control);
    await send('ingress', async (table) => {
      const sent = await pushIngress(table!, before?.ingress ?? null);
      return { refused: sent.refused.map((r) => ({ ...r, table: 'ingress' as const })) };
    });
  }
  return { pushed: tables, refused };
}

/** readConfig is nginx.conf's text, empty when there is none yet. */
function readConfig(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/** NginxActorOptions are what the nginx-process effects need: the binary, the config folder, the port to probe. */
export interface NginxActorOptions {
  readonly binary: string;
  readonly dir: string;
  readonly httpPort: number;
  /** `--https-port`, named when nginx cannot bind it */
  readonly httpsPort?: number;
  readonly log: Logger;
  /** the folder's one writer, shared with boot's check (a new one when absent) */
  readonly folder?: ConfigFolder;
  /**
   * nginx's stdout, where the access log goes by default: 'inherit' (the controller's stdout, the pod's log) or
   * 'ignore' (/dev/null, the default: a controller run inside a test's process)
   */
  readonly stdout?: 'inherit' | 'ignore';
  /** how long a new master may take to listen before it counts as failed */
  readonly startTimeoutMs?: number;
  /** how long a reload may take to start the new config's workers before it counts as failed (60 s) */
  readonly reloadTimeoutMs?: number;
  /** the Lua balancer's control channel and the per-start token its master gets in the environment */
  /**
   * unix sockets nginx listens on (ssl-passthrough's, TLS Terminate's), or a function listing them at each start (their
   * names come and go): a master killed with -9 leaves them, and the next could not bind
   */
  readonly sockets?: readonly string[] | (() => readonly string[]);
  readonly control?: {
    readonly channel: TablePusher;
    readonly env: Readonly<Record<string, string>>;
    /** the control socket: a master killed with -9 leaves it behind, and the next could not bind it */
    readonly socket: string;
  };
}

/**
 * nginxActors implements the nginx-process machine's effects over real processes. `master`
 * owns one master process per invocation: it reports `nginx.started` once the HTTP port
 * answers (so `running` means serving), and `nginx.exited` when the master is gone.
 */
export function nginxActors(options: NginxActorOptions) {
  const conf = join(options.dir, 'nginx.conf');
  const folder = options.folder ?? new ConfigFolder(options.binary, options.dir);
  let current: Master | null = null;
  // the profiles (routes as data) of the nginx.conf the master serves: pushed routes never name another
  let serving: ReadonlySet<string> | null = null;
  // A failed reload still tidies up, keeping what the master serves and what nginx.conf names.
  const sweptAfter = async (error: unknown, serving: NginxConfigSet['files'] = []) => {
    await folder.sweep(serving).catch(() => undefined);
    return error;
  };
  // A reload's push, before it (the union) or after it (the exact tables): what nginx holds then. Entries nginx
  // refused are pushed again later (as if this push had not been), so that the push actor reports them: the reload's
  // verdict carries no refused entries; a push that failed leaves what nginx holds now, and the machine pushes the rest.
  const pushAroundReload = (
    channel: TablePusher,
    tables: DynamicTables,
    held: PushedTables | null,
    when: 'before' | 'after',
  ): Promise<PushedTables | null> =>
    pushTables(channel, tables, held, serving).then(
      (result) => (result.refused.length > 0 ? held : result.pushed),
      (error: unknown) => {
        options.log.warn({ err: (error as Error).message }, `could not push the tables ${when} the reload`);
        return (error as PushFailure).held ?? held;
      },
    );
  // Writes, tests and swaps in a config, and signals nginx: the `reload` actor's work.
  const reloadConfig = async (input: ReloadInput, signal: AbortSignal, began: number): Promise<PushedTables | null> => {
    const staged = await folder.stage(input, signal);
    if (signal.aborted) throw new Error('the reload was abandoned');
    // Refused, nginx.conf still names what the master serves; the refused config's own files go.
    if (!staged.ok) throw await sweptAfter(new ConfigRefusedError(staged.error), input.applied?.files);
    // Old and new workers both find their backends while the reload runs; the exact tables follow.
    let pushed: PushedTables | null = input.pushed;
    const channel = options.control?.channel;
    if (channel && input.tables) {
      const union = tablesForReload(input.tables as DynamicTables, input.pushed as DynamicTables | null);
      pushed = await pushAroundReload(channel, union, input.pushed, 'before');
    }
    const signalled = performance.now();
    try {
      if (!current) throw new Error('no nginx master to reload');
      // Confirmed, not assumed: a config nginx -t passed can still fail in the master (a port in use).
      await current.reload(options.reloadTimeoutMs ?? 60_000);
    } catch (error) {
      // The master still serves the applied config's files (htpasswd files are read per request).
      throw await sweptAfter(error, input.applied?.files);
    }
    serving = servedProfiles(input.config);
    // The exact tables now that only the new config serves: the union is gone, and the Ingress routes held back for
    // profiles the old config lacked (servableIngress) go with them.
    if (channel && input.tables)
      pushed = await pushAroundReload(channel, input.tables as DynamicTables, pushed, 'after');
    // Now nginx serves only this config: the files only older ones named go with this reload.
    const removed = await folder.sweep();
    if (removed.length > 0) options.log.info({ removed }, 'removed files no config names any more');
    // One line per reload, so that a reader (or the event-to-route benchmark) sees where the time goes.
    options.log.info(
      {
        trigger: input.trigger ?? 'config',
        ms: round(performance.now() - began),
        write_ms: round(staged.timings.writeMs),
        test_ms: round(staged.timings.testMs),
        confirm_ms: round(performance.now() - signalled),
      },
      'nginx reloaded',
    );
    // As ingress-nginx at --v=2: what changed in nginx.conf.
    if (options.log.isLevelEnabled('debug') && input.applied)
      options.log.debug({ diff: unifiedDiff(input.applied.config, input.config) }, 'nginx.conf changed');
    return pushed;
  };
  return {
    master: fromCallback<NginxMasterCommand, MasterInput>(({ sendBack, receive }) => {
      let master: Master;
      if (options.control) rmSync(options.control.socket, { force: true });
      const sockets = typeof options.sockets === 'function' ? options.sockets() : (options.sockets ?? []);
      for (const socket of sockets) rmSync(socket, { force: true });
      try {
        master = spawnMaster(options.binary, options.dir, conf, options.log, options.control?.env, options.stdout);
      } catch (error) {
        // The spawn's own error (ENOENT, …) comes later, on the child: look for the binary to say which.
        const code = (error as { code?: string }).code ?? whyNotRunnable(options.binary) ?? undefined;
        const cause = notRunnable(options.binary, code);
        if (!cause) throw error;
        // Gone since the start (boot ran it): restarting will not bring it back, so the machine gives up after
        // its restarts, with this as the controller's reason, rather than restarting forever without a word.
        options.log.warn({ err: cause.message }, 'nginx cannot be run');
        queueMicrotask(() => sendBack({ type: 'nginx.exited', code: null, signal: null, fatal: cause.message }));
        return () => {};
      }
      current = master;
      // the config it starts with is the one in the folder (boot's, or the last good one)
      serving = servedProfiles(readConfig(conf));
      let exited = false;
      options.log.info({ nginxPid: master.pid }, 'nginx master started');
      void master.exited.then((exit) => {
        exited = true;
        if (current === master) current = null;
        options.log.warn({ nginxPid: master.pid, ...exit }, 'nginx master exited');
        sendBack({ type: 'nginx.exited', code: exit.code, signal: exit.signal, fatal: portInUse(exit.emerg, options) });
      });
      // nginx writes its pid file only once its sockets are bound, so the pid file naming this
      // master (not just something answering on the port, which may be another process) means it serves.
      const ready = waitForPidFile(
        join(options.dir, 'nginx.pid'),
        master.pid,
        options.startTimeoutMs ?? 10_000,
        () => exited,
      ).then(() => (exited ? undefined : waitForPort(options.httpPort, options.startTimeoutMs ?? 10_000)));
      void Promise.race([ready, master.exited]).then(
        () => !exited && sendBack({ type: 'nginx.started', pid: master.pid }),
        (error: Error) => {
          options.log.error({ nginxPid: master.pid, err: error.message }, 'nginx did not start listening; killing it');
          master.kill();
        },
      );
      // Told to quit or be killed: the machine waits for its exit (stopping, or a master that never listened).
      let told = false;
      receive((command) => {
        told = true;
        if (command.type === 'nginx.quit') master.quit();
        else master.kill();
      });
      // Stopped while its master runs untold, nobody owns that master any more: its machine failed, and the root
      // supervisor stopped what the machine ran (xstate does not, statelyai/xstate#5153). Killed, or the restarted
      // machine would run a second master beside it. Leaving `alive` otherwise means it exited or was told to quit.
      return () => {
        if (!exited && !told) master.kill();
      };
    }),

    // Stopped (its master crashed, the machine stopped), a reload writes, tests and signals nothing more. A failure
    // is said with its trigger: the machine retries it or the quarantine judges it.
    reload: fromPromise<ReloadResult, ReloadInput>(async ({ input, signal }) => {
      const at = Date.now();
      const began = performance.now();
      const timing = (): ApplyTiming => ({ at, durationMs: round(performance.now() - began) });
      try {
        const pushed = await reloadConfig(input, signal, began);
        return { pushed, timing: timing() };
      } catch (error) {
        // Stopped (its master crashed, the machine stopped): nothing failed that the operator must know of.
        if (!signal.aborted)
          options.log.warn(
            {
              trigger: input.trigger ?? 'config',
              ms: round(performance.now() - began),
              error: error instanceof Error ? error.message : String(error),
            },
            'nginx reload failed; the last good config stays',
          );
        // The machine records when it started and how long it took (the machine reads no clock).
        throw withTiming(error, timing());
      }
    }),

    push: fromPromise<PushResult, PushInput>(async ({ input }) => {
      const channel = options.control?.channel;
      if (!channel) throw new Error('no control channel to push the tables over');
      const at = Date.now();
      const started = performance.now();
      const timing = (): ApplyTiming => ({ at, durationMs: round(performance.now() - started) });
      const result = await pushTables(channel, input.tables as DynamicTables, input.pushed, serving).catch(
        (error: unknown) => {
          throw withTiming(error, timing());
        },
      );
      // Pushes are frequent (every endpoint change): debug, where reloads are info.
      options.log.debug(
        { trigger: input.trigger ?? 'tables', ms: round(performance.now() - started) },
        'tables pushed',
      );
      // Names and reasons only: a refused certificate's key material never leaves nginx.
      if (result.refused.length > 0)
        options.log.warn(
          { refused: result.refused.slice(0, 20), count: result.refused.length },
          'nginx refused table entries; it applied the rest',
        );
      return { ...result, timing: timing() };
    }),

    drain: fromPromise<void, DrainInput>(async ({ input, signal }) => {
      if (input.pid === null) return;
      const { killed } = await drainOrphans({
        pgid: input.pid,
        port: options.httpPort,
        drainTimeoutMs: input.drainTimeoutMs,
        signal,
      });
      options.log.info(
        { pgid: input.pid, killed },
        killed ? 'orphaned nginx workers killed after the drain timeout' : 'orphaned nginx workers drained',
      );
    }),
  };
}
