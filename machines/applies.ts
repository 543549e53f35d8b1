/**
 * What the nginx-process machine (and the sync queue, which decides push or reload) compare and record about
 * applies: config sets, pushed tables, and the record of recent reloads and pushes. Pure: the timings come from
 * the effects that did the work (`ApplyTiming`), never from a clock read here.
 */
import type { ApplyTiming, NginxConfigSet, PushedTables } from './events.js';

/**
 * ApplyRecord is one reload or push the actor carried out (or tried), for the status page and the logs: what caused
 * it, when it started, how long it took and whether nginx took it.
 */
export interface ApplyRecord {
  readonly kind: 'reload' | 'push';
  /** what caused it: `Ingress default/app changed`, `EndpointSlice shop/web-x7k2p changed (3 more)`, `template`, … */
  readonly trigger: string;
  /** when it started, in ms since the epoch */
  readonly at: number;
  readonly durationMs: number;
  readonly ok: boolean;
  /** why it failed, in nginx's or the channel's words */
  readonly error?: string;
}

/** RECENT_APPLIES is how many ApplyRecords the actor keeps (`recent`). */
export const RECENT_APPLIES = 20;

/** remember adds a record to the ring of recent applies: newest last, at most RECENT_APPLIES. */
export function remember(recent: readonly ApplyRecord[], record: ApplyRecord): readonly ApplyRecord[] {
  const kept = recent.length >= RECENT_APPLIES ? recent.slice(recent.length - RECENT_APPLIES + 1) : recent;
  return [...kept, record];
}

/** timingOf is the ApplyTiming a failed effect attached to its error (`timing`), if any. */
export function timingOf(error: unknown): ApplyTiming | undefined {
  return (error as { timing?: ApplyTiming } | null | undefined)?.timing;
}

/**
 * applyRecord is the ApplyRecord of a reload or push that just ended, with the timing its effect measured (an effect
 * that said none, as a model run's double, records the epoch and no duration).
 */
export function applyRecord(
  kind: ApplyRecord['kind'],
  trigger: string | null | undefined,
  timing: ApplyTiming | undefined,
  error?: unknown,
): ApplyRecord {
  return {
    kind,
    trigger: trigger ?? (kind === 'push' ? 'tables' : 'config'),
    at: timing?.at ?? 0,
    durationMs: Math.max(0, timing?.durationMs ?? 0),
    ok: error === undefined,
    ...(error === undefined ? {} : { error: describe(error) }),
  };
}

/**
 * PushFailure is what a failed `push` may say about the tables nginx holds after it: a push sends its tables one by
 * one, so nginx may hold some of the new ones (`held`; null when it holds no complete set). Without it, nginx is taken
 * to hold what it held before.
 */
export interface PushFailure {
  readonly held?: PushedTables | null;
}

/** heldAfter is what nginx holds after a push failed with `error`, given what it held before. */
export function heldAfter(error: unknown, before: PushedTables | null): PushedTables | null {
  const held = (error as PushFailure | null | undefined)?.held;
  return held === undefined ? before : held;
}

/** sameTables says whether two pushes carry the same versions of both tables. */
export function sameTables(a: PushedTables | null, b: PushedTables | null): boolean {
  if (a === b) return true;
  if (!a || !b) return false;
  return (
    a.backends.version === b.backends.version &&
    a.certificates.version === b.certificates.version &&
    a.routes?.version === b.routes?.version &&
    a.ingress?.version === b.ingress?.version
  );
}

/**
 * pushSettled clears a push failure that no longer stands: once nginx holds the latest tables (a reload's push took
 * them, or the tables came back to what nginx holds), nothing is left to retry, and no failure is left for /healthz.
 */
export function pushSettled(
  tables: PushedTables | null,
  pushed: PushedTables | null,
): { pushFailuresInRow?: 0; lastPushError?: null; failedTables?: null } {
  return tables !== null && !sameTables(tables, pushed)
    ? {}
    : { pushFailuresInRow: 0, lastPushError: null, failedTables: null };
}

/** sameConfigSet says whether two sets are the same text naming the same files with the same contents. */
export function sameConfigSet(a: NginxConfigSet | null, b: NginxConfigSet | null): boolean {
  if (a === b) return true;
  if (a === null || b === null || a.config !== b.config || a.files.length !== b.files.length) return false;
  return a.files.every((file, i) => file.file === b.files[i]!.file && file.pem === b.files[i]!.pem);
}

/** describe is an error's message, as the records and /healthz say it. */
export function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
