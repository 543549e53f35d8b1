import type { AnyActorRef, EventObject } from 'xstate';
import type { SyncQueueCommand } from '../../machines/events.js';

/** Enqueuer is the part of an `enqueueActions` callback's arguments that tellSyncQueue uses. */
export interface Enqueuer {
  readonly system: { get(systemId: string): AnyActorRef | undefined };
  readonly enqueue: { sendTo(to: AnyActorRef, event: EventObject): void };
}

/**
 * tellSyncQueue, called inside a provided `enqueueActions`, enqueues a `sendTo` of `event` to the
 * sync queue (systemId `syncQueue`): xstate delivers it once the sender's step is done. A custom
 * action that called `send()` itself made the sync queue take its whole step inside the sender's
 * action, where xstate warns "Custom actions should not call `assign()` / `raise()` directly"
 * about the queue's own enqueued actions. Nothing is sent while no sync queue runs (one being
 * restarted), or when `event` is null.
 */
export function tellSyncQueue({ system, enqueue }: Enqueuer, event: SyncQueueCommand | null): void {
  const queue = system.get('syncQueue');
  if (queue && event) enqueue.sendTo(queue, event);
}
