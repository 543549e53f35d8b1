import { execa, type ResultPromise } from 'execa';
import { readdirSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Logger } from '../log.js';

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

const NGINX_LEVEL = /\[(debug|info|notice|warn|error|crit|alert|emerg)\]/;

function logLine(log: Logger, line: string): void {
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
    .filter((p) => p.pgrp === pgid && p.state !== 'Z' && p.state !== 'X')
    .map((p) => p.pid);
}

/** ProcStat is what /proc/<pid>/stat says of a process that the readers here need. */
interface ProcStat {
  readonly pid: number;
  readonly state: string;
  readonly ppid: number;
  readonly pgrp: number;
}

/** processes reads every process's stat line from /proc (Linux), skipping those that exit meanwhile. */
function processes(): ProcStat[] {
  const found: ProcStat[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited while we looked
    }
    // pid (comm) state ppid pgrp …; comm may hold spaces and parentheses, so split after the last ')'.
    const [state = '', ppid, pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    found.push({ pid: Number(entry), state, ppid: Number(ppid), pgrp: Number(pgrp) });
  }
  return found;
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
 * stopped through the group. nginx's stderr (its error log) goes to the logger line by line.
 */
export function spawnMaster(
  binary: string,
  dir: string,
  conf: string,
  log: Logger,
  env: Readonly<Record<string, string>> = {},
): Master {
  const child: ResultPromise = execa(binary, ['-p', `${dir}/`, '-c', conf, '-g', 'daemon off;'], {
    reject: false,
    env,
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
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

/**
 * workerPids lists a master's running worker processes (children titled `nginx: worker process`,
 * without the ` is shutting down` an old generation's workers take on), from /proc.
 */
export function workerPids(master: number): number[] {
  return processes()
    .filter((p) => p.ppid === master && p.state !== 'Z' && workerTitle(p.pid) === 'nginx: worker process')
    .map((p) => p.pid);
}

/** workerTitle is a process's title (its first cmdline word), or null once it exited. */
function workerTitle(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? null;
  } catch {
    return null;
  }
}

/**
 * confirmReload signals a reload and waits for its verdict. The master reads and checks the
 * whole config, binds what it names, and only then forks the new generation's workers; when any
 * of that fails it logs `[emerg]` and keeps serving the old config. So a worker that was not
 * there before the signal means the new config took, and once no worker of the old generation
 * is left that has not begun shutting down (closing its listeners), only the new config serves
 * new connections; an `[emerg]` after the signal means it does not. (A worker of the old generation that crashed just
 * then and was respawned would also be
 * new: a false success that the next reload, which every sync can trigger, corrects.)
 */
async function confirmReload(
  pid: number,
  readers: Set<(line: string) => void>,
  sendSignal: () => void,
  exited: Promise<MasterExit>,
  timeoutMs: number,
): Promise<void> {
  const before = new Set(workerPids(pid));
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
      const workers = workerPids(pid);
      // New workers serve the new config; the old ones still accept until they start shutting down.
      if (workers.some((worker) => !before.has(worker)) && !workers.some((worker) => before.has(worker))) return;
      if (performance.now() > deadline)
        throw new Error(`nginx did not start workers for the new config within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  } finally {
    readers.delete(read);
  }
}
