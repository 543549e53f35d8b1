/** What others may read of the sync queue (the status page): typed selectors over its snapshot. */
import type { SyncQueueContext } from '../syncQueue.machine.js';
import { selectActorState, type SnapshotView, isMachineSnapshot } from './state.js';

/** SyncQueueView is the sync queue's snapshot as its selectors read it. */
export type SyncQueueView = SnapshotView<SyncQueueContext>;

/** SyncProgress is the sync queue's counters. */
export interface SyncProgress {
  /** the state, `absent` when it does not run */
  readonly state: string;
  readonly generation: number;
  readonly syncsCompleted: number;
  readonly syncsFailed: number;
  /** the last change received: `k8s.changed Ingress default/web`, `template.changed`, … */
  readonly lastChange: string | null;
  readonly lastError: string | null;
}

/** selectSyncProgress reads the counters; zeros when the queue does not run. */
export function selectSyncProgress(queue: SyncQueueView | undefined): SyncProgress {
  if (!queue)
    return { state: 'absent', generation: 0, syncsCompleted: 0, syncsFailed: 0, lastChange: null, lastError: null };
  const c = queue.context;
  return {
    state: selectActorState(queue),
    generation: c.generation,
    syncsCompleted: c.syncsCompleted,
    syncsFailed: c.syncsFailed,
    lastChange: c.lastChange === '' ? null : c.lastChange,
    lastError: c.lastError === '' ? null : c.lastError,
  };
}

/** isSyncQueueSnapshot says whether a looked-up snapshot is the syncQueue machine's. */
export function isSyncQueueSnapshot(snapshot: unknown): snapshot is SyncQueueView {
  return isMachineSnapshot(snapshot, 'syncQueue');
}
