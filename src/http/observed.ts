/**
 * ObservedActors: the typed, read-only view of the running actors that /healthz, /metrics, the status page and the
 * demo read, each through the selectors its machine exports (machines/selectors/). The actor system holds untyped
 * refs; observeSystem is the one place where a snapshot becomes its machine's, checked by the machine's id.
 */
import type { AnyActorRef } from 'xstate';
import { watcherId } from '../../machines/events.js';
import { isNginxProcessSnapshot, type NginxProcessView } from '../../machines/selectors/nginxProcess.js';
import { isResourceWatcherSnapshot, type ResourceWatcherView } from '../../machines/selectors/resourceWatcher.js';
import { isRootSupervisorSnapshot, type RootSupervisorView } from '../../machines/selectors/rootSupervisor.js';
import type { ActorState } from '../../machines/selectors/state.js';
import { isStatusSnapshot, type StatusView } from '../../machines/selectors/status.js';
import { isSyncQueueSnapshot, type SyncQueueView } from '../../machines/selectors/syncQueue.js';
import { isTemplateSnapshot, type TemplateView } from '../../machines/selectors/template.js';

/** AnyActorSystem is an actor system of any actors (xstate's own alias is not exported). */
type AnyActorSystem = AnyActorRef['system'];

/** ROOT_SYSTEM_ID is the root supervisor's systemId (main.ts creates it under this id). */
export const ROOT_SYSTEM_ID = 'root';

/** ObservedActors finds each actor's snapshot, undefined while it does not run. */
export interface ObservedActors {
  /** the root supervisor: only its state is read here */
  root(): Pick<RootSupervisorView, 'value' | 'status'> | undefined;
  nginx(): NginxProcessView | undefined;
  /** the watcher of one kind (`Ingress`) */
  watcher(kind: string): ResourceWatcherView | undefined;
  template(): TemplateView | undefined;
  syncQueue(): SyncQueueView | undefined;
  status(): StatusView | undefined;
  /** any actor by systemId (`root`, `http`, `watcher.Ingress`, …), for its state and status */
  actor(systemId: string): ActorState | undefined;
}

/** observeSystem reads the snapshots of a running controller's actor system, at each call. */
export function observeSystem(system: AnyActorSystem): ObservedActors {
  const snapshot = (systemId: string): unknown => system.get(systemId)?.getSnapshot();
  const typed =
    <V>(is: (snapshot: unknown) => snapshot is V) =>
    (systemId: string): V | undefined => {
      const found = snapshot(systemId);
      return is(found) ? found : undefined;
    };
  const root = typed(isRootSupervisorSnapshot);
  const nginx = typed(isNginxProcessSnapshot);
  const watcher = typed(isResourceWatcherSnapshot);
  const template = typed(isTemplateSnapshot);
  const syncQueue = typed(isSyncQueueSnapshot);
  const status = typed(isStatusSnapshot);
  return {
    root: () => root(ROOT_SYSTEM_ID),
    nginx: () => nginx('nginx'),
    watcher: (kind) => watcher(watcherId(kind)),
    template: () => template('template'),
    syncQueue: () => syncQueue('syncQueue'),
    status: () => status('status'),
    actor: (systemId) => {
      const found = snapshot(systemId);
      return isActorState(found) ? found : undefined;
    },
  };
}

function isActorState(snapshot: unknown): snapshot is ActorState {
  return (
    snapshot !== null && typeof snapshot === 'object' && 'status' in snapshot && typeof snapshot.status === 'string'
  );
}
