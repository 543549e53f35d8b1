/**
 * What every selector starts from: the part of an actor's snapshot others may read. Real snapshots
 * (`actor.getSnapshot()`) have this shape; so do the plain objects the selectors' tests build.
 */

/** ActorState is any actor's state value (machines) and status (`active`, `done`, `error`, `stopped`). */
export interface ActorState {
  readonly value?: unknown;
  readonly status: string;
}

/** SnapshotView is a machine's snapshot as its selectors read it: state value, status and typed context. */
export interface SnapshotView<TContext> extends ActorState {
  readonly value: unknown;
  readonly context: TContext;
}

/** stateLabel flattens a state value to a dotted path; parallel regions stop at their parent (`leader`). */
export function stateLabel(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value);
    if (entries.length === 1) {
      const [key, child] = entries[0]!;
      return typeof child === 'object' && child !== null && Object.keys(child).length > 1
        ? key
        : `${key}.${stateLabel(child)}`;
    }
  }
  return String(value);
}

/**
 * selectActorState names an actor's state as /metrics' `ingress_actors_actor_state` and the status page do: its
 * flattened state while active (machines), else its status (other actors, and any actor no longer active).
 */
export function selectActorState(actor: ActorState): string {
  return actor.status === 'active' && actor.value !== undefined ? stateLabel(actor.value) : actor.status;
}

/**
 * isMachineSnapshot says whether an inspected or looked-up snapshot is one of the machine with this id: what lets a
 * reader of the actor system (whose refs are untyped) take a snapshot as its machine's.
 */
export function isMachineSnapshot(snapshot: unknown, machineId: string): boolean {
  if (snapshot === null || typeof snapshot !== 'object' || !('machine' in snapshot)) return false;
  const machine: unknown = snapshot.machine;
  return machine !== null && typeof machine === 'object' && 'id' in machine && machine.id === machineId;
}
