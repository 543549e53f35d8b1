/** What others may read of a resource watcher (/healthz, /metrics): typed selectors over its snapshot. */
import type { ResourceWatcherContext } from '../resourceWatcher.machine.js';
import { stateLabel, type SnapshotView, isMachineSnapshot } from './state.js';

/** ResourceWatcherView is a watcher's snapshot as its selectors read it. */
export type ResourceWatcherView = SnapshotView<ResourceWatcherContext>;

/** WatcherSync is how far a watcher is: synced once, and whether (since when) it is not watching now. */
export interface WatcherSync {
  /** the flattened state */
  readonly state: string;
  /** the first list was in (`k8s.synced` was reported) */
  readonly synced: boolean;
  /** since when (epoch ms) it is not watching after a failure; null while it watches */
  readonly staleSince: number | null;
  /** failures in a row since the last successful list */
  readonly failures: number;
  readonly lastError: string | null;
}

/** selectWatcherSync reads a watcher's progress. */
export function selectWatcherSync(watcher: ResourceWatcherView): WatcherSync {
  const c = watcher.context;
  return {
    state: stateLabel(watcher.value),
    synced: c.reportedSynced,
    staleSince: c.staleSince,
    failures: c.failures,
    lastError: c.lastError === '' ? null : c.lastError,
  };
}

/** isResourceWatcherSnapshot says whether a looked-up snapshot is the resourceWatcher machine's. */
export function isResourceWatcherSnapshot(snapshot: unknown): snapshot is ResourceWatcherView {
  return isMachineSnapshot(snapshot, 'resourceWatcher');
}
