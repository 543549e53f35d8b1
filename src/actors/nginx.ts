import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fromCallback, fromPromise, type AnyActorRef } from 'xstate';
import type { NginxMasterCommand } from '../../machines/events.js';
import type { DrainInput, MasterInput, ReloadInput } from '../../machines/nginxProcess.machine.js';
import type { Logger } from '../log.js';
import { ConfigRefusedError, stageConfig } from '../nginx/apply.js';
import { drainOrphans } from '../nginx/drain.js';
import { spawnMaster, type Master } from '../nginx/master.js';
import { waitForPort } from '../nginx/probe.js';

const round = (ms: number) => Math.round(ms * 10) / 10;

async function waitForPidFile(path: string, pid: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await readFile(path, 'utf8').catch(() => '')).trim() !== String(pid)) {
    if (Date.now() > deadline) throw new Error(`nginx did not write its pid ${pid} to ${path} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** NginxActorOptions are what the nginx-process effects need: the binary, the config folder, the port to probe. */
export interface NginxActorOptions {
  readonly binary: string;
  readonly dir: string;
  readonly httpPort: number;
  readonly log: Logger;
  /** how long a new master may take to listen before it counts as failed */
  readonly startTimeoutMs?: number;
  /** how long a reload may take to start the new config's workers before it counts as failed (60 s) */
  readonly reloadTimeoutMs?: number;
}

/**
 * nginxActors implements the nginx-process machine's effects over real processes. `master`
 * owns one master process per invocation: it reports `nginx.started` once the HTTP port
 * answers (so `running` means serving), and `nginx.exited` when the master is gone.
 */
export function nginxActors(options: NginxActorOptions) {
  const conf = join(options.dir, 'nginx.conf');
  let current: Master | null = null;
  return {
    master: fromCallback<NginxMasterCommand, MasterInput>(({ sendBack, receive, system }) => {
      const master = spawnMaster(options.binary, options.dir, conf, options.log);
      current = master;
      let exited = false;
      options.log.info({ pid: master.pid }, 'nginx master started');
      void master.exited.then((exit) => {
        exited = true;
        if (current === master) current = null;
        options.log.warn({ pid: master.pid, ...exit }, 'nginx master exited');
        sendBack({ type: 'nginx.exited', code: exit.code, signal: exit.signal });
      });
      // nginx writes its pid file only once its sockets are bound, so the pid file naming this
      // master (not just something answering on the port, which may be another process) means it serves.
      const ready = waitForPidFile(join(options.dir, 'nginx.pid'), master.pid, options.startTimeoutMs ?? 10_000).then(() =>
        waitForPort(options.httpPort, options.startTimeoutMs ?? 10_000),
      );
      void Promise.race([ready, master.exited]).then(
        () => !exited && sendBack({ type: 'nginx.started', pid: master.pid }),
        (error: Error) => {
          options.log.error({ pid: master.pid, err: error.message }, 'nginx did not start listening; killing it');
          master.kill();
        },
      );
      receive((command) => {
        if (command.type === 'nginx.quit') master.quit();
        else master.kill();
      });
      // xstate does not stop invoked actors when their machine fails (statelyai/xstate#5153): kill
      // this master then, or the restarted machine would run a second one beside it, and stop the
      // machine's children (this one, a reload in flight), or each would report its end to the
      // failed machine: "Event nginx.exited was sent to stopped actor".
      const machine = system.get('nginx') as AnyActorRef | undefined;
      const watch = machine?.subscribe({
        error: () => {
          master.kill();
          // xstate.stop is what a parent's stopChild sends (stop() is for root actors only).
          const children = (machine.getSnapshot() as { children: Record<string, AnyActorRef | undefined> }).children;
          for (const child of Object.values(children)) child?.send({ type: 'xstate.stop' });
        },
      });
      // No kill on cleanup: leaving `alive` means the master already exited or was told to quit.
      return () => watch?.unsubscribe();
    }),

    reload: fromPromise<void, ReloadInput>(async ({ input }) => {
      const staged = await stageConfig(options.binary, options.dir, input.config, []);
      if (!staged.ok) throw new ConfigRefusedError(staged.error);
      if (!current) throw new Error('no nginx master to reload');
      const signalled = performance.now();
      // Confirmed, not assumed: a config nginx -t passed can still fail in the master (a port in use).
      await current.reload(options.reloadTimeoutMs ?? 60_000);
      // One line per reload, so that a reader (or the event-to-route benchmark) sees where the time goes.
      options.log.info(
        { write_ms: round(staged.timings.writeMs), test_ms: round(staged.timings.testMs), confirm_ms: round(performance.now() - signalled) },
        'nginx reloaded',
      );
    }),

    drain: fromPromise<void, DrainInput>(async ({ input, signal }) => {
      if (input.pid === null) return;
      const { killed } = await drainOrphans({ pgid: input.pid, port: options.httpPort, drainTimeoutMs: input.drainTimeoutMs, signal });
      options.log.info({ pgid: input.pid, killed }, killed ? 'orphaned nginx workers killed after the drain timeout' : 'orphaned nginx workers drained');
    }),
  };
}
