/** What others may read of the root supervisor (/healthz, /metrics, the CLI): typed selectors over its snapshot. */
import type { RootSupervisorContext, RootSupervisorOutput } from '../rootSupervisor.machine.js';
import { isMachineSnapshot, stateLabel, type SnapshotView } from './state.js';

/** RootSupervisorView is the root supervisor's snapshot as its selectors read it. */
export interface RootSupervisorView extends SnapshotView<RootSupervisorContext> {
  /** the final state's output, once it stopped */
  readonly output?: RootSupervisorOutput | undefined;
}

/** RootPhase is where the controller is: booting, running, or past it (stopping, stopped). */
export type RootPhase =
  | { readonly phase: 'booting' }
  | { readonly phase: 'running' }
  | { readonly phase: 'other'; readonly state: string };

/** selectRootPhase reads whether the controller boots, runs, or stops (and the state it is in then). */
export function selectRootPhase(root: Pick<RootSupervisorView, 'value'>): RootPhase {
  if (root.value === 'booting') return { phase: 'booting' };
  if (root.value === 'running') return { phase: 'running' };
  return { phase: 'other', state: stateLabel(root.value) };
}

/** selectChildRestarts is how often each child was restarted, in total, by child id. */
export function selectChildRestarts(root: RootSupervisorView): Readonly<Record<string, number>> {
  return root.context.restarts;
}

/** isRootSupervisorSnapshot says whether an inspected snapshot is the root supervisor's. */
export function isRootSupervisorSnapshot(snapshot: unknown): snapshot is RootSupervisorView {
  return isMachineSnapshot(snapshot, 'rootSupervisor');
}

/** selectExit is the controller's exit code and reason once the root supervisor stopped; null before. */
export function selectExit(root: Pick<RootSupervisorView, 'output'>): RootSupervisorOutput | null {
  return root.output ?? null;
}
