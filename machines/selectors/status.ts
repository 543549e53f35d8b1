/** What others may read of the status actor (/metrics, the status page): typed selectors over its snapshot. */
import type { GatewayStatus } from '../../src/model/gateway/routes.js';
import type { Problem } from '../../src/model/nginx-model.js';
import type { StatusContext } from '../status.machine.js';
import { stateLabel, type SnapshotView, isMachineSnapshot } from './state.js';

/** StatusView is the status actor's snapshot as its selectors read it. */
export type StatusView = SnapshotView<StatusContext>;

/** selectIsLeader says whether this replica holds the leader Lease (the status actor is in `leader`). */
export function selectIsLeader(status: StatusView | undefined): boolean {
  return status !== undefined && stateLabel(status.value).split('.')[0] === 'leader';
}

/** selectRole is this replica's role; `unknown` while the status actor does not run. */
export function selectRole(status: StatusView | undefined): 'leader' | 'follower' | 'unknown' {
  if (status?.status !== 'active') return 'unknown';
  return selectIsLeader(status) ? 'leader' : 'follower';
}

/** selectProblems are what the last sync found wrong (Events are recorded for them), null before the first. */
export function selectProblems(status: StatusView | undefined): readonly Problem[] | null {
  return status?.context.problems ?? null;
}

/** selectGatewayStatus is the Gateway API status the last sync computed, null before it or with the Gateway API off. */
export function selectGatewayStatus(status: StatusView | undefined): GatewayStatus | null {
  return status?.context.gatewayStatus ?? null;
}

/** isStatusSnapshot says whether a looked-up snapshot is the status machine's. */
export function isStatusSnapshot(snapshot: unknown): snapshot is StatusView {
  return isMachineSnapshot(snapshot, 'status');
}
