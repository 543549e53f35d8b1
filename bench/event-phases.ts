/**
 * Where the time of one API change goes, from the controller's own log lines: `sync done`
 * (its end time, its length and its phases) and `nginx reloaded` (staging write and `nginx -t`).
 */
import type { LogLine } from './child-controller.js';
import { percentile } from './stats.js';

/** Phases of one change, in milliseconds; they add up to `total`. */
export interface Phases {
  readonly total: number;
  /** API write → sync start: the watch event's trip, the debounce and any rate-limit wait */
  readonly debounce: number;
  /** cache snapshot and model build */
  readonly build: number;
  readonly render: number;
  /** certificates (in the sync), then the staged nginx.conf (in the reload) */
  readonly write: number;
  readonly nginx_t: number;
  /** SIGHUP sent → first request on the new backend: new workers, plus the poller's granularity */
  readonly reload: number;
  /** the rest: the hand-off from the sync to the nginx actor, the rename, log rounding */
  readonly other: number;
}

interface SyncDone extends LogLine {
  readonly ms: number;
  readonly phases: { snapshot_ms: number; build_ms: number; render_ms: number; write_ms?: number };
}
interface Reloaded extends LogLine {
  readonly write_ms: number;
  readonly test_ms: number;
  /** SIGHUP → the reload confirmed: the line is logged after it, so the signal went at `time - confirm_ms` */
  readonly confirm_ms: number;
}

/**
 * attribute splits one change, written at `written` and first served at `routed` (epoch ms):
 * its sync is the first that started after the write, its reload the first logged after that
 * sync ended. Undefined until both lines are in.
 */
export function attribute(logs: readonly LogLine[], written: number, routed: number): Phases | undefined {
  const sync = logs.find((l): l is SyncDone => l.msg === 'sync done' && l.time - (l as SyncDone).ms >= written);
  const reload = sync && logs.find((l): l is Reloaded => l.msg === 'nginx reloaded' && l.time >= sync.time);
  if (!sync || !reload) return undefined;
  // New workers may serve before the reload is confirmed (old ones still shutting down): the signal is what counts.
  const signalled = reload.time - reload.confirm_ms;
  if (signalled > routed + 1)
    throw new Error(
      `the reload signalled at ${signalled} is after the route was served at ${routed}: not this change's`,
    );
  const p = sync.phases;
  const known = {
    debounce: sync.time - sync.ms - written,
    build: p.snapshot_ms + p.build_ms,
    render: p.render_ms,
    write: (p.write_ms ?? 0) + reload.write_ms, // the nginx actor writes the files now, the sync none
    nginx_t: reload.test_ms,
    reload: routed - signalled,
  };
  const total = routed - written;
  return { total, ...known, other: total - Object.values(known).reduce((a, b) => a + b, 0) };
}

/** summarize prints p50 and p99 of the total and of every phase. */
export function summarize(samples: readonly Phases[]): string {
  const of = (key: keyof Phases) => samples.map((s) => s[key]);
  const total = of('total');
  const keys = ['debounce', 'build', 'render', 'write', 'nginx_t', 'reload', 'other'] as const;
  const fmt = (n: number) => (Math.abs(n) < 10 ? n.toFixed(1) : n.toFixed(0));
  return [
    `p50_ms=${fmt(percentile(total, 50))} p99_ms=${fmt(percentile(total, 99))}`,
    ...keys.map((k) => `${k}_p50=${fmt(percentile(of(k), 50))} ${k}_p99=${fmt(percentile(of(k), 99))}`),
  ].join(' ');
}
