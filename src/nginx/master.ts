import { execa, type ResultPromise } from 'execa';
import { readdirSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Logger } from '../log.js';

/** MasterExit is how an nginx master ended. */
export interface MasterExit {
  readonly code: number | null;
  readonly signal: string | null;
}

/** Master is a running nginx master process, the leader of a process group of its own. */
export interface Master {
  readonly pid: number;
  readonly exited: Promise<MasterExit>;
  /** SIGQUIT: graceful shutdown, in-flight requests finish */
  quit(): void;
  /** SIGKILL to the whole group, workers included */
  kill(): void;
  /** SIGHUP: re-read nginx.conf (what `nginx -s reload` sends) */
  reload(): void;
}

const NGINX_LEVEL = /\[(debug|info|notice|warn|error|crit|alert|emerg)\]/;

function logLine(log: Logger, line: string): void {
  const level = NGINX_LEVEL.exec(line)?.[1] ?? 'info';
  const pinoLevel = level === 'notice' || level === 'info' ? 'debug' : level === 'crit' || level === 'alert' || level === 'emerg' ? 'error' : level;
  log[pinoLevel as 'info' | 'warn' | 'error' | 'debug'](line);
}

/**
 * liveGroupMembers lists the processes of a group that are still running, from /proc (Linux).
 * kill(-pgid, 0) is not enough: orphans whose reaper is slow (a container's PID 1, say) linger
 * as zombies, which hold no socket and serve nothing but still count for kill().
 */
export function liveGroupMembers(pgid: number): number[] {
  const members: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited while we looked
    }
    // pid (comm) state ppid pgrp …; comm may hold spaces and parentheses, so split after the last ')'.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z' && state !== 'X') members.push(Number(entry));
  }
  return members;
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
export function spawnMaster(binary: string, dir: string, conf: string, log: Logger): Master {
  const child: ResultPromise = execa(binary, ['-p', `${dir}/`, '-c', conf, '-g', 'daemon off;'], {
    reject: false,
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
    buffer: false,
  });
  if (child.pid === undefined) throw new Error(`cannot start ${binary}`);
  const pid = child.pid;
  if (child.stderr) createInterface({ input: child.stderr }).on('line', (line) => logLine(log, line));
  // 'exit', not the result promise: orphaned workers hold stderr open long after the master is gone.
  const exited = new Promise<MasterExit>((resolve) => child.nodeChildProcess.once('exit', (code, signal) => resolve({ code, signal })));
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
    reload: () => signal('SIGHUP'),
  };
}
