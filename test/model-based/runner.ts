/**
 * Executes model paths against a world: for each step the world performs the real action, the
 * runner waits until the real actor has taken exactly the transitions the model takes for that
 * event (from the actor's own inspection events), compares state value and the context both sides
 * track, then lets the world assert what must hold around it (ports, processes, requests).
 */
import type { AnyActorRef, AnyMachineSnapshot, AnyStateMachine, InspectionEvent } from 'xstate';
import { activeStates, modelMicrosteps, transitionKey, type Coverage, type Path } from './graph.js';

/** RealStep is one microstep the real actor took, as its inspection reported it. */
export interface RealStep {
  readonly keys: readonly string[];
  readonly snapshot: AnyMachineSnapshot;
}

/** StepContext is what a world's exec and check get: the path, the step, and the steps around it. */
export interface StepContext {
  readonly path: Path;
  readonly index: number;
  readonly step: Path['steps'][number];
  readonly previous: Path['steps'][number] | undefined;
  readonly next: Path['steps'][number] | undefined;
}

/** World is a system under test: a real actor of the machine, and the real things around it. */
export interface World {
  /** the real actor's microsteps, appended by its inspect callback (see microstepRecorder) */
  readonly log: RealStep[];
  /** transitions that may fire on their own at any time (timers the path does not control) */
  readonly ambient: ReadonlySet<string>;
  /** the snapshot of the real actor now (undefined before the init step started it) */
  snapshot(): AnyMachineSnapshot | undefined;
  /** the real actor's initial snapshot, taken before it started */
  initial(): AnyMachineSnapshot;
  /** the context the model and the real actor must agree on, from either side's snapshot */
  project(snapshot: AnyMachineSnapshot, side: 'model' | 'real'): unknown;
  /** performs the real action that makes the step's event happen (the first step starts the actor) */
  exec(at: StepContext): Promise<void>;
  /** asserts the world in the step's state; `current` is false when the actor has already moved on by itself */
  check(at: StepContext, current: boolean): Promise<void>;
  close(): Promise<void>;
}

/** microstepRecorder is the inspect callback that fills a World's log with the root actor's microsteps. */
export function microstepRecorder(log: RealStep[]): (event: InspectionEvent) => void {
  return (event) => {
    if (event.type !== '@xstate.microstep' || (event.actorRef as AnyActorRef).sessionId !== event.rootId) return;
    const taken = (event as unknown as { _transitions: Parameters<typeof transitionKey>[0][] })._transitions;
    if (taken.length > 0) log.push({ keys: taken.map(transitionKey), snapshot: event.snapshot as AnyMachineSnapshot });
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** RunOptions bound each step in time. */
export interface RunOptions {
  readonly stepTimeoutMs: number;
}

/**
 * runPath walks one path in a fresh world and records what the real actor did in `coverage`.
 * It throws, naming the path and the step, at the first difference between model and world.
 */
export async function runPath(
  machine: AnyStateMachine,
  path: Path,
  world: World,
  coverage: Coverage,
  options: RunOptions,
): Promise<void> {
  let pos = 0;
  const where = (i: number) => `path "${path.name}", step ${i} (${path.steps[i]!.event.type})`;
  try {
    for (let index = 0; index < path.steps.length; index++) {
      const at: StepContext = {
        path,
        index,
        step: path.steps[index]!,
        previous: path.steps[index - 1],
        next: path.steps[index + 1],
      };
      await world.exec(at);
      let reached: AnyMachineSnapshot;
      if (index === 0) {
        reached = world.initial();
        for (const id of activeStates(reached)) coverage.realStates.add(id);
      } else {
        const expected = modelMicrosteps(machine, at.previous!.state, at.step.event);
        const deadline = Date.now() + options.stepTimeoutMs;
        reached = at.previous!.state;
        for (const micro of expected) {
          for (;;) {
            const entry = world.log[pos];
            if (entry?.keys.every((k) => world.ambient.has(k)) && !same(entry.keys, micro.keys)) {
              for (const k of entry.keys) coverage.realKeys.add(k);
              pos++;
              continue;
            }
            if (entry) {
              if (!same(entry.keys, micro.keys)) {
                const seen = world.log
                  .slice(pos, pos + 5)
                  .map((e) => `${e.keys.join(' + ')} → ${JSON.stringify(e.snapshot.value)}`);
                throw new Error(
                  `${where(index)}: the model takes ${micro.keys.join(' + ')}` +
                    `, the real actor took:\n  ${seen.join('\n  ')}`,
                );
              }
              for (const k of entry.keys) coverage.realKeys.add(k);
              for (const id of activeStates(entry.snapshot)) coverage.realStates.add(id);
              reached = entry.snapshot;
              pos++;
              break;
            }
            if (Date.now() > deadline) {
              throw new Error(
                `${where(index)}: the real actor did not take ${micro.keys.join(' + ')} within ` +
                  `${options.stepTimeoutMs} ms; it is in ${JSON.stringify(world.snapshot()?.value)}`,
              );
            }
            await sleep(5);
          }
        }
      }
      if (!same(reached.value, at.step.state.value))
        throw new Error(
          `${where(index)}: model in ${JSON.stringify(at.step.state.value)}` +
            `, real actor in ${JSON.stringify(reached.value)}`,
        );
      const model = world.project(at.step.state, 'model');
      const real = world.project(reached, 'real');
      if (!same(model, real))
        throw new Error(
          `${where(index)}: context differs\n  model ${JSON.stringify(model)}\n  real  ${JSON.stringify(real)}`,
        );
      const now = world.snapshot();
      const current = world.log.length === pos && now !== undefined && same(now.value, at.step.state.value);
      try {
        await world.check(at, current);
      } catch (error) {
        (error as Error).message =
          `${where(index)}, in ${JSON.stringify(at.step.state.value)}: ${(error as Error).message}`;
        throw error;
      }
    }
  } finally {
    await world.close();
  }
}
