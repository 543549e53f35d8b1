/**
 * What others may read of the nginx-process actor (/healthz, /metrics, the status page, the demo): typed selectors
 * over its snapshot. Pure; the actor's context stays its own.
 */
import type { ApplyRecord } from '../applies.js';
import type { NginxExit } from '../nginxEffects.js';
import type { NginxProcessContext } from '../nginxProcess.machine.js';
import type { NginxConfigSet } from '../events.js';
import { isMachineSnapshot, selectActorState, stateLabel, type SnapshotView } from './state.js';

/** NginxProcessView is the nginx-process actor's snapshot as its selectors read it. */
export type NginxProcessView = SnapshotView<NginxProcessContext>;

/** NginxHealth is what /healthz judges nginx by. */
export interface NginxHealth {
  /** the flattened state, `absent` when the actor does not run */
  readonly state: string;
  /** nginx runs (`alive.running`, or `alive.reloading` or `alive.pushing`, where the master serves on) */
  readonly running: boolean;
  /** at least one config from the cluster was applied by this nginx actor */
  readonly servesClusterConfig: boolean;
  /** why the last reload attempt failed, as nginx or the system said it; null when it succeeded */
  readonly lastReloadError: string | null;
  readonly reloadsFailed: number;
  /** how the last master ended; null while the first runs */
  readonly lastExit: NginxExit | null;
  /** the Lua balancer's tables; null when backends are rendered into nginx.conf */
  readonly tables: {
    /** this master took a push since it started */
    readonly held: boolean;
    readonly pid: number | null;
    /** why the last push failed, while pushes fail in a row; null otherwise */
    readonly failing: string | null;
  } | null;
}

/** selectNginxHealth reads what /healthz needs; an absent actor is not running and serves nothing. */
export function selectNginxHealth(nginx: NginxProcessView | undefined): NginxHealth {
  if (!nginx)
    return {
      state: 'absent',
      running: false,
      servesClusterConfig: false,
      lastReloadError: null,
      reloadsFailed: 0,
      lastExit: null,
      tables: null,
    };
  const c = nginx.context;
  const state = stateLabel(nginx.value);
  return {
    state,
    // A push or a reload in progress leaves the master serving.
    running: state === 'alive.running' || state === 'alive.reloading' || state === 'alive.pushing',
    servesClusterConfig: c.reloadsOk > 0,
    lastReloadError: nonEmpty(c.lastReloadError),
    reloadsFailed: c.reloadsFailed,
    lastExit: c.lastExit,
    tables:
      c.tables === null
        ? null
        : {
            held: c.pushed !== null,
            pid: c.pid,
            failing: c.pushFailuresInRow > 0 ? nonEmpty(c.lastPushError) : null,
          },
  };
}

/** NginxCounters are the nginx actor's counters /metrics turns into Prometheus counters. */
export interface NginxCounters {
  readonly reloadsOk: number;
  readonly reloadsFailed: number;
  readonly restarts: number;
  readonly pushesOk: number;
  readonly pushesFailed: number;
}

/** selectNginxCounters reads the counters (per actor instance: a restarted actor starts again at 0). */
export function selectNginxCounters(nginx: Pick<NginxProcessView, 'context'>): NginxCounters {
  const { reloadsOk, reloadsFailed, restarts, pushesOk, pushesFailed } = nginx.context;
  return { reloadsOk, reloadsFailed, restarts, pushesOk, pushesFailed };
}

/** isNginxProcessSnapshot says whether an inspected snapshot is the nginx-process machine's. */
export function isNginxProcessSnapshot(snapshot: unknown): snapshot is NginxProcessView {
  return isMachineSnapshot(snapshot, 'nginxProcess');
}

/** selectMasterPid is the running master's pid (its process group), null while none runs. */
export function selectMasterPid(nginx: NginxProcessView | undefined): number | null {
  return nginx?.context.pid ?? null;
}

/** selectServedConfig is the config set nginx serves now, null before the first reload. */
export function selectServedConfig(nginx: NginxProcessView | undefined): NginxConfigSet | null {
  return nginx?.context.applied ?? null;
}

/** NginxActivity is the nginx actor's counters and last applies, as the status page lists them. */
export interface NginxActivity extends NginxCounters {
  readonly state: string;
  readonly pid: number | null;
  readonly reloadsSkipped: number;
  readonly lastReloadError: string | null;
  readonly lastPushError: string | null;
  /** the last applies the actor remembers, newest first */
  readonly recent: readonly ApplyRecord[];
}

/** selectNginxActivity reads the counters and the recent applies (newest first); zeros when it does not run. */
export function selectNginxActivity(nginx: NginxProcessView | undefined): NginxActivity {
  if (!nginx)
    return {
      state: 'absent',
      pid: null,
      restarts: 0,
      reloadsOk: 0,
      reloadsFailed: 0,
      reloadsSkipped: 0,
      pushesOk: 0,
      pushesFailed: 0,
      lastReloadError: null,
      lastPushError: null,
      recent: [],
    };
  const c = nginx.context;
  return {
    state: selectActorState(nginx),
    pid: c.pid,
    restarts: c.restarts,
    reloadsOk: c.reloadsOk,
    reloadsFailed: c.reloadsFailed,
    reloadsSkipped: c.reloadsSkipped,
    pushesOk: c.pushesOk,
    pushesFailed: c.pushesFailed,
    lastReloadError: nonEmpty(c.lastReloadError),
    lastPushError: nonEmpty(c.lastPushError),
    recent: [...c.recent].reverse(),
  };
}

/**
 * selectPushedCertificates maps each host to the certificate PEM in the table the actor pushes to the Lua balancer
 * (empty when backends are rendered into nginx.conf). The table's entries are the sync's (src/model/dynamic-tables.ts):
 * the machine carries them opaquely, so they are read defensively.
 */
export function selectPushedCertificates(nginx: NginxProcessView | undefined): ReadonlyMap<string, string> {
  const byHost = new Map<string, string>();
  const table: unknown = nginx?.context.tables?.certificates;
  const list = field(table, 'certificates');
  if (!Array.isArray(list)) return byHost;
  // one entry per Secret, with the hosts it serves
  for (const entry of list) {
    const cert = field(entry, 'cert');
    const hosts = field(entry, 'hosts');
    if (typeof cert !== 'string' || !Array.isArray(hosts)) continue;
    for (const host of hosts) if (typeof host === 'string') byHost.set(host, cert);
  }
  return byHost;
}

const nonEmpty = (text: string | null): string | null => (text === null || text === '' ? null : text);

function field(value: unknown, name: string): unknown {
  return value !== null && typeof value === 'object' && name in value
    ? (value as Readonly<Record<string, unknown>>)[name]
    : undefined;
}
