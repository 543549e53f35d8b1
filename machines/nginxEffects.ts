/**
 * The nginx-process machine's effects, as the machine sees them: what each invocation gets (src/actors/nginx.ts
 * implements them over real processes and the control channel), and how a master ended.
 */
import type { NginxConfigSet, PushedTables } from './events.js';

/** MasterInput is what each `master` invocation gets: how many restarts preceded it. */
export interface MasterInput {
  readonly restarts: number;
}

/**
 * ReloadInput is what the `reload` actor must write, test and swap in (nginx.conf's text and the
 * files it names), and the set nginx serves now, whose files stay until the new one took.
 */
export interface ReloadInput extends NginxConfigSet {
  readonly applied: NginxConfigSet | null;
  /** the tables to push before the new config is signalled (with the Lua balancer), and what nginx holds now */
  readonly tables: PushedTables | null;
  readonly pushed: PushedTables | null;
}

/** PushInput is what the `push` actor sends over the control channel: `tables`, where they differ from `pushed`. */
export interface PushInput {
  readonly tables: PushedTables;
  readonly pushed: PushedTables | null;
  /** what caused the push, for the log */
  readonly trigger?: string;
}

/** DrainInput tells the `drain` actor which process group died and how long its orphans may serve. */
export interface DrainInput {
  /** the dead master's pid, which is its process group id; null if it never started */
  readonly pid: number | null;
  readonly drainTimeoutMs: number;
}

/** NginxExit records how the last master ended: its exit, or why it could not be run. */
export interface NginxExit {
  readonly pid: number | null;
  readonly code: number | null;
  readonly signal: string | null;
  /** set when the `master` actor itself failed (nginx could not be spawned) */
  readonly error: string | null;
}
