import { wafAuditRecord } from './waf-audit.js';
import { execa, type ResultPromise } from 'execa';
import { createInterface } from 'node:readline';
import type { Logger } from '../log.js';
import { holdsSocket, isLive, listeningSocketInodes, liveChildren, processes, processTitle } from './proc.js';

/** MasterExit is how an nginx master ended. */
export interface MasterExit {
  readonly code: number | null;
  readonly signal: string | null;
  /** the first `[emerg]` line nginx logged (why a master that failed to start gave up), or null */
  readonly emerg: string | null;
}

/** Master is a running nginx master process, the leader of a process group of its own. */
export interface Master {
  readonly pid: number;
  readonly exited: Promise<MasterExit>;
  /** SIGQUIT: graceful shutdown, in-flight requests finish */
  quit(): void;
  /** SIGKILL to the whole group, workers included */
  kill(): void;
  /**
   * SIGHUP (what `nginx -s reload` sends), then wait until the master confirms the new config:
   * resolves once a worker of the new generation runs, rejects with the master's `[emerg]` (a
   * config that passed `nginx -t` can still fail here: a port another process holds) or after
   * `timeoutMs` without either.
   */
  reload(timeoutMs: number): Promise<void>;
}

/** MODSECURITY_LINE is an error-log line of the ModSecurity module: what its audit record says, as text. */
const MODSECURITY_LINE = /^\S+ \S+ \[\w+\] \d+#\d+: (?:\*\d+ )?\[client [^\]]*\] ModSecurity: /;

const NGINX_LEVEL = /\[(debug|info|notice|warn|error|crit|alert|emerg)\]/;

/**
 * logLine logs one line of nginx's stderr: ModSecurity's audit records as records with fields of their own (the
 * Ingress, the transaction id, the rule ids), its per-rule error lines (the same facts, as text) at debug, and every
 * other line at the level nginx gave it.
 */
export function logLine(log: Logger, line: string): void {
  const audit = wafAuditRecord(line);
  if (audit) {
    log.warn({ waf: audit }, audit.blocked ? 'ModSecurity blocked a request' : 'ModSecurity matched a request');
    return;
  }
  if (MODSECURITY_LINE.test(line)) return void log.debug(line);
  const level = NGINX_LEVEL.exec(line)?.[1] ?? 'info';
  const pinoLevel =
    level === 'notice' || level === 'info'
      ? 'debug'
      : level === 'crit' || level === 'alert' || level === 'emerg'
        ? 'error'
        : level;
  log[pinoLevel as 'info' | 'warn' | 'error' | 'debug'](line);
}

/**
 * liveGroupMembers lists the processes of a group that are still running, from /proc (Linux).
 * kill(-pgid, 0) is not enough: orphans whose reaper is slow (a container's PID 1, say) linger
 * as zombies, which hold no socket and serve nothing but still count for kill().
 */
export function liveGroupMembers(pgid: number): number[] {
  return processes()
    .filter((p) => p.pgrp === pgid && isLive(p))
    .map((p) => p.pid);
}

/** signalGroup sends a signal to every process of a group; false when none is left. */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * spawnMaster starts `nginx -g 'daemon off;'` on a config folder, in a new session so that its
 * workers share its process group: when the master dies, the orphans can still be found and
 * stopped through the group. nginx's stderr (its error log, `-e stderr` from the first line on, so
 * no `logs/error.log` grows in the folder) goes to the logger line by line. `stdout` 'inherit'
 * gives nginx the controller's stdout, where `access_log /dev/stdout` writes (the pod's log);
 * 'ignore' gives it /dev/null (tests that run the controller in their own process).
 */
export function spawnMaster(
  binary: string,
  dir: string,
  conf: string,
  log: Logger,
  env: Readonly<Record<string, string>> = {},
  stdout: 'inherit' | 'ignore' = 'ignore',
): Master {
  const child: ResultPromise = execa(binary, ['-e', 'stderr', '-p', `${dir}/`, '-c', conf, '-g', 'daemon off;'], {
    reject: false,
    env,
    detached: true,
    stdio: ['ignore', stdout, 'pipe'],
    buffer: false,
  });
  if (child.pid === undefined) throw new Error(`cannot start ${binary}`);
  const pid = child.pid;
  // Who else reads the error log: a reload waiting for the master's verdict.
  const readers = new Set<(line: string) => void>();
  let emerg: string | null = null;
  let stderrClosed = !child.stderr;
  const closed = new Promise<void>((resolve) => {
    if (!child.stderr) return resolve();
    const lines = createInterface({ input: child.stderr });
    lines.on('line', (line) => {
      logLine(log, line);
      // The first: nginx ends a failed bind() with `still could not bind()`, which names no port.
      if (emerg === null && MASTER_FAILED.test(line)) emerg = line;
      for (const read of readers) read(line);
    });
    lines.on('close', () => resolve(void (stderrClosed = true)));
  });
  // 'exit', not the result promise: orphaned workers hold stderr open long after the master is gone.
  // A master that failed on its own (exit code, no signal) has no workers: its last words are read first.
  const exited = new Promise<MasterExit>((resolve) =>
    child.nodeChildProcess.once('exit', (code, signal) => {
      const words =
        code !== 0 && signal === null && !stderrClosed
          ? Promise.race([closed, new Promise((r) => setTimeout(r, 200))])
          : Promise.resolve();
      void words.then(() => resolve({ code, signal, emerg }));
    }),
  );
  void child.catch(() => undefined);
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(pid, name);
    } catch {
      /* already gone */
    }
  };
  return {
    pid,
    exited,
    quit: () => signal('SIGQUIT'),
    kill: () => void signalGroup(pid, 'SIGKILL'),
    reload: (timeoutMs) => confirmReload(pid, readers, () => signal('SIGHUP'), exited, timeoutMs),
  };
}

/** MASTER_FAILED is how the master says a reload did not take: it keeps the old config and workers. */
const MASTER_FAILED = /\[emerg\]/;

/** WORKER_TITLE is the title a worker takes once it is ready (an old one's becomes `… is shutting down`). */
const WORKER_TITLE = 'nginx: worker process';

/**
 * confirmReload signals a reload and waits for its verdict. The master reads and checks the
 * whole config, binds what it names, and only then forks the new generation's workers; when any
 * of that fails it logs `[emerg]` and keeps serving the old config. So the reload took once a
 * child forked after the signal runs as a worker and no child forked before it still holds a
 * listening socket: an old worker closes its listeners when told to shut down, and until then it
 * may take new connections with the old config. (Titles alone are not enough: a worker forked
 * just before the signal has not taken its title yet, and an old one takes `is shutting down`
 * just before it closes its listeners.) An `[emerg]` after the signal means it did not take. (A worker
 * of the old config that crashed just then and was respawned would count as new: a false success
 * that the next reload corrects.)
 */
async function confirmReload(
  pid: number,
  readers: Set<(line: string) => void>,
  sendSignal: () => void,
  exited: Promise<MasterExit>,
  timeoutMs: number,
): Promise<void> {
  // the master's children: its workers, whatever title they have taken yet
  const before = new Set(liveChildren(pid));
  let refusal: string | null = null;
  const read = (line: string) => {
    if (refusal === null && MASTER_FAILED.test(line)) refusal = line;
  };
  readers.add(read);
  let gone = false;
  void exited.then(() => (gone = true));
  try {
    sendSignal();
    const deadline = performance.now() + timeoutMs;
    for (let wait = 2; ; wait = Math.min(wait * 2, 50)) {
      if (refusal !== null) throw new Error(`nginx did not apply the new config, the old one stays: ${refusal}`);
      if (gone) throw new Error('nginx exited during the reload');
      const now = liveChildren(pid);
      const newWorker = now.some((child) => !before.has(child) && processTitle(child) === WORKER_TITLE);
      if (newWorker) {
        const listeners = listeningSocketInodes();
        if (!now.some((child) => before.has(child) && holdsSocket(child, listeners))) return;
      }
      if (performance.now() > deadline)
        throw new Error(`nginx did not start workers for the new config within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  } finally {
    readers.delete(read);
  }
}
