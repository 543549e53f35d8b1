import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** ProcStat is what /proc/<pid>/stat says of a process that the readers here need. */
export interface ProcStat {
  readonly pid: number;
  readonly state: string;
  readonly ppid: number;
  readonly pgrp: number;
}

/** statOf reads a process's stat line from /proc (Linux); null once it exited. */
function statOf(pid: number): ProcStat | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null; // exited while we looked
  }
  // pid (comm) state ppid pgrp …; comm may hold spaces and parentheses, so split after the last ')'.
  const [state = '', ppid, pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { pid, state, ppid: Number(ppid), pgrp: Number(pgrp) };
}

/** processes reads every process's stat line from /proc (Linux), skipping those that exit meanwhile. */
export function processes(): ProcStat[] {
  const found: ProcStat[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = statOf(Number(entry));
    if (stat !== null) found.push(stat);
  }
  return found;
}

/** whether this kernel lists a thread's children in /proc (CONFIG_PROC_CHILDREN), asked of this process once */
let childrenFiles: boolean | null = null;

/**
 * liveChildren lists a single-threaded process's live children (an nginx master's workers): from
 * /proc/<pid>/task/<pid>/children where the kernel has it, a few small reads where a walk of every process's stat line
 * costs milliseconds a call on a busy machine (a reload polls it); else from that walk.
 */
export function liveChildren(parent: number): number[] {
  childrenFiles ??= (() => {
    try {
      readFileSync(`/proc/${process.pid}/task/${process.pid}/children`, 'utf8');
      return true;
    } catch {
      return false;
    }
  })();
  if (!childrenFiles) return processes().flatMap((p) => (p.ppid === parent && isLive(p) ? [p.pid] : []));
  let listed: string;
  try {
    listed = readFileSync(`/proc/${parent}/task/${parent}/children`, 'utf8');
  } catch {
    return []; // the parent exited
  }
  const pids: number[] = [];
  for (const word of listed.split(' ')) {
    if (!/^\d+$/.test(word)) continue;
    const stat = statOf(Number(word));
    // the pid may have been reused meanwhile by another process's child
    if (stat !== null && stat.ppid === parent && isLive(stat)) pids.push(stat.pid);
  }
  return pids;
}

/** isLive says whether a process still runs (a zombie holds no socket and serves nothing). */
export const isLive = (p: ProcStat) => p.state !== 'Z' && p.state !== 'X';

/** processTitle is a process's title (its first cmdline word), or null once it exited. */
export function processTitle(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? null;
  } catch {
    return null;
  }
}

/** TCP_LISTEN is the `st` column of /proc/net/tcp for a listening socket. */
const TCP_LISTEN = '0A';

/** listeningSocketInodes is the inode of every listening TCP socket of this network namespace. */
export function listeningSocketInodes(): Set<string> {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue; // no IPv6 in this kernel
    }
    // sl local rem st tx:rx tr:when retrnsmt uid timeout inode …
    for (const line of text.split('\n').slice(1)) {
      const columns = line.trim().split(/ +/);
      if (columns[3] === TCP_LISTEN && columns[9] !== undefined) inodes.add(columns[9]);
    }
  }
  return inodes;
}

/** holdsSocket says whether a process has any of these socket inodes open; false once it exited. */
export function holdsSocket(pid: number, inodes: ReadonlySet<string>): boolean {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false;
  }
  for (const fd of fds) {
    let target: string;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue; // closed while we looked
    }
    if (target.startsWith('socket:[') && inodes.has(target.slice('socket:['.length, -1))) return true;
  }
  return false;
}
