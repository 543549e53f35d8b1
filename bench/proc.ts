/** A process's memory and CPU from /proc (Linux), for benchmarks that watch another process. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { liveGroupMembers } from '../src/nginx/master.js';

/** CLK_TCK: the unit of utime and stime in /proc/<pid>/stat (100 nearly everywhere). */
const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** rssBytes is VmRSS from /proc/<pid>/status. */
export function rssBytes(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb ?? 0) * 1024;
}

/** cpuSeconds is the CPU time the process itself used so far: utime + stime (its children not included). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The fields after comm, which may hold spaces: state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/**
 * groupPssBytes sums the proportional set size of a process group: shared pages (nginx's workers share most) counted
 * once.
 */
export function groupPssBytes(pgid: number): number {
  let total = 0;
  for (const pid of liveGroupMembers(pgid)) {
    try {
      total += Number(/^Pss:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0) * 1024;
    } catch {
      // exited while we looked
    }
  }
  return total;
}

/** CpuMeter measures a process's CPU share over a span: 100 is one core busy all the time. */
export function cpuMeter(pid: number): () => number {
  const cpu = cpuSeconds(pid);
  const t = performance.now();
  return () => (100 * (cpuSeconds(pid) - cpu)) / ((performance.now() - t) / 1000);
}

export const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(0);
