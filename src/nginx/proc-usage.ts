/**
 * What nginx's processes use, from /proc (Linux): the master and its children (workers, old workers still
 * draining after a reload), as ingress-nginx's process collector groups them. The parsers are pure and take the
 * files' text; `readUsage` does the reading. Counters (CPU, I/O) are made monotonic by UsageTotals: a worker that
 * exits takes its CPU time out of /proc, not out of the counter.
 */
import { readFileSync } from 'node:fs';
import { liveChildren } from './proc.js';

/** ProcStatLine is what /proc/<pid>/stat says that the metrics need (times in clock ticks, sizes as given). */
export interface ProcStatLine {
  readonly pid: number;
  readonly state: string;
  readonly ppid: number;
  readonly utime: number;
  readonly stime: number;
  /** when the process started, in clock ticks after boot */
  readonly starttime: number;
  /** virtual memory, bytes */
  readonly vsize: number;
  /** resident set, pages */
  readonly rss: number;
}

/**
 * parseStat reads a /proc/<pid>/stat line; null when it is not one. The command name may hold spaces and
 * parentheses, so the fields are counted from the last `)`.
 */
export function parseStat(text: string): ProcStatLine | null {
  const open = text.indexOf(' (');
  const close = text.lastIndexOf(')');
  if (open < 1 || close < open) return null;
  const pid = Number(text.slice(0, open));
  // Field 3 (state) is the first after the name; proc(5) numbers fields from 1.
  const rest = text
    .slice(close + 2)
    .trim()
    .split(' ');
  const field = (n: number) => Number(rest[n - 3]);
  const line: ProcStatLine = {
    pid,
    state: rest[0] ?? '',
    ppid: field(4),
    utime: field(14),
    stime: field(15),
    starttime: field(22),
    vsize: field(23),
    rss: field(24),
  };
  const numbers = [line.pid, line.ppid, line.utime, line.stime, line.starttime, line.vsize, line.rss];
  return line.state.length === 1 && numbers.every((n) => Number.isSafeInteger(n) && n >= 0) ? line : null;
}

/** ProcStatm is /proc/<pid>/statm's first two fields, in pages. */
export interface ProcStatm {
  readonly size: number;
  readonly resident: number;
}

/** parseStatm reads /proc/<pid>/statm; null when it is not seven page counts. */
export function parseStatm(text: string): ProcStatm | null {
  const fields = text.trim().split(' ').map(Number);
  if (fields.length !== 7 || !fields.every((n) => Number.isSafeInteger(n) && n >= 0)) return null;
  return { size: fields[0]!, resident: fields[1]! };
}

/** ProcIo is what /proc/<pid>/io says reached the storage layer (bytes). */
export interface ProcIo {
  readonly readBytes: number;
  readonly writeBytes: number;
}

/** parseIo reads /proc/<pid>/io; null when read_bytes or write_bytes is missing. */
export function parseIo(text: string): ProcIo | null {
  const readBytes = /^read_bytes: (\d+)$/m.exec(text);
  const writeBytes = /^write_bytes: (\d+)$/m.exec(text);
  return readBytes === null || writeBytes === null
    ? null
    : { readBytes: Number(readBytes[1]), writeBytes: Number(writeBytes[1]) };
}

/** parseBootTime reads `btime` (unix seconds) from /proc/stat; null when absent. */
export function parseBootTime(text: string): number | null {
  const m = /^btime (\d+)$/m.exec(text);
  return m ? Number(m[1]) : null;
}

/** SystemUnits are the kernel's units for /proc: bytes per page and clock ticks per second. */
export interface SystemUnits {
  readonly pageSize: number;
  readonly clockTicks: number;
}

/** Linux's usual units, when /proc/self/auxv cannot be read. */
export const USUAL_UNITS: SystemUnits = { pageSize: 4096, clockTicks: 100 };

const AT_PAGESZ = 6n;
const AT_CLKTCK = 17n;

/**
 * parseAuxv reads the page size and clock ticks from a 64-bit little-endian /proc/self/auxv (pairs of key and value,
 * ending at key 0): what sysconf(_SC_PAGESIZE) and sysconf(_SC_CLK_TCK) answer. Missing ones are the usual units.
 */
export function parseAuxv(data: Uint8Array): SystemUnits {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let { pageSize, clockTicks } = USUAL_UNITS;
  for (let at = 0; at + 16 <= data.byteLength; at += 16) {
    const key = view.getBigUint64(at, true);
    if (key === 0n) break;
    const value = Number(view.getBigUint64(at + 8, true));
    if (key === AT_PAGESZ && value > 0) pageSize = value;
    if (key === AT_CLKTCK && value > 0) clockTicks = value;
  }
  return { pageSize, clockTicks };
}

/** ProcessSample is one nginx process as the metrics see it. */
export interface ProcessSample {
  /** pid and start time: a pid the kernel reuses is another process */
  readonly key: string;
  readonly cpuSeconds: number;
  readonly residentBytes: number;
  readonly virtualBytes: number;
  /** unix seconds */
  readonly startTime: number;
  /** null when /proc/<pid>/io cannot be read (another user's process, without the right to trace it) */
  readonly io: ProcIo | null;
}

/** sampleOf turns one process's files into a sample (resident from statm, else from stat). */
export function sampleOf(
  stat: ProcStatLine,
  statm: ProcStatm | null,
  io: ProcIo | null,
  bootTime: number,
  units: SystemUnits,
): ProcessSample {
  return {
    key: `${stat.pid}@${stat.starttime}`,
    cpuSeconds: (stat.utime + stat.stime) / units.clockTicks,
    residentBytes: (statm?.resident ?? stat.rss) * units.pageSize,
    virtualBytes: stat.vsize,
    startTime: bootTime + stat.starttime / units.clockTicks,
    io,
  };
}

let units: SystemUnits | null = null;
function systemUnits(): SystemUnits {
  if (!units) {
    try {
      units = parseAuxv(readFileSync('/proc/self/auxv'));
    } catch {
      units = USUAL_UNITS;
    }
  }
  return units;
}

const readOrNull = (path: string): string | null => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null; // exited meanwhile, or not ours to read
  }
};

/**
 * readUsage samples the nginx master `masterPid` and its live children; empty when the master is gone. Synchronous:
 * a handful of small /proc files per process, at scrape time.
 */
export function readUsage(masterPid: number): ProcessSample[] {
  const bootTime = parseBootTime(readOrNull('/proc/stat') ?? '');
  if (bootTime === null) return [];
  const pids = [masterPid, ...liveChildren(masterPid)];
  const samples: ProcessSample[] = [];
  for (const pid of pids) {
    const stat = parseStat(readOrNull(`/proc/${pid}/stat`) ?? '');
    if (!stat || stat.state === 'Z' || stat.state === 'X') continue;
    if (pid !== masterPid && stat.ppid !== masterPid) continue; // the pid was reused meanwhile
    const statm = parseStatm(readOrNull(`/proc/${pid}/statm`) ?? '');
    const io = parseIo(readOrNull(`/proc/${pid}/io`) ?? '');
    samples.push(sampleOf(stat, statm, io, bootTime, systemUnits()));
  }
  return samples;
}

/** Usage is the group's figures: gauges as they are now, counters since the first sample. */
export interface Usage {
  readonly numProcs: number;
  readonly residentBytes: number;
  readonly virtualBytes: number;
  readonly oldestStartTime: number;
  readonly cpuSeconds: number;
  readonly readBytes: number;
  readonly writeBytes: number;
}

interface Seen {
  readonly cpuSeconds: number;
  readonly readBytes: number;
  readonly writeBytes: number;
}

/**
 * UsageTotals keeps the counters monotonic across processes coming and going (reloads replace the workers, a crash
 * the master), as process-exporter does for ingress-nginx: each process adds what it used since it was last seen,
 * all of it the first time.
 */
export class UsageTotals {
  private seen = new Map<string, Seen>();
  private cpuSeconds = 0;
  private readBytes = 0;
  private writeBytes = 0;

  /** add takes one scrape's samples; null when there are none (nginx is not running). */
  add(samples: readonly ProcessSample[]): Usage | null {
    const next = new Map<string, Seen>();
    for (const s of samples) {
      const before = this.seen.get(s.key) ?? { cpuSeconds: 0, readBytes: 0, writeBytes: 0 };
      const now = {
        cpuSeconds: Math.max(s.cpuSeconds, before.cpuSeconds),
        readBytes: Math.max(s.io?.readBytes ?? 0, before.readBytes),
        writeBytes: Math.max(s.io?.writeBytes ?? 0, before.writeBytes),
      };
      this.cpuSeconds += now.cpuSeconds - before.cpuSeconds;
      this.readBytes += now.readBytes - before.readBytes;
      this.writeBytes += now.writeBytes - before.writeBytes;
      next.set(s.key, now);
    }
    this.seen = next;
    if (samples.length === 0) return null;
    return {
      numProcs: samples.length,
      residentBytes: samples.reduce((sum, s) => sum + s.residentBytes, 0),
      virtualBytes: samples.reduce((sum, s) => sum + s.virtualBytes, 0),
      oldestStartTime: Math.min(...samples.map((s) => s.startTime)),
      cpuSeconds: this.cpuSeconds,
      readBytes: this.readBytes,
      writeBytes: this.writeBytes,
    };
  }
}
