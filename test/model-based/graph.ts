/**
 * Test paths from a machine definition with xstate/graph, and the bookkeeping that proves every
 * state and transition of the machine was walked, in the model and in the world.
 *
 * xstate/graph's createTestModel refuses machines with `invoke` or `after` (its validateMachine
 * throws "Invocations on test machines are not supported"), and every machine here has both; so
 * the paths come from the TestModel class that createTestModel wraps, over the very same machine
 * objects the controller runs, with events supplied per state and a state key that keeps only the
 * context that decides behaviour (counters would make the graph infinite).
 */
import {
  createEmptyActor,
  getInitialMicrosteps,
  getMicrosteps,
  type AnyActorScope,
  type AnyEventObject,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type AnyStateNode,
} from 'xstate';
import { TestModel, getStateNodes, type StatePath } from 'xstate/graph';

/** Step is one event of a path and the model's state right after it; the first step is `xstate.init`. */
export interface Step {
  readonly event: AnyEventObject;
  readonly state: AnyMachineSnapshot;
}

/** Path is a sequence of steps from the initial state, with a name to print. */
export interface Path {
  readonly name: string;
  readonly steps: readonly Step[];
}

/** TransitionLike is the part of xstate's TransitionDefinition the keys are made of. */
interface TransitionLike {
  readonly source: AnyStateNode;
  readonly eventType: string;
}

/**
 * transitionKey names one transition definition: source state, event, and its position among the
 * alternatives for that event (guarded branches are separate transitions). Stable across
 * `.provide()`, which rebuilds the state nodes.
 */
export function transitionKey(t: TransitionLike): string {
  const always = t.source.always ?? [];
  if ((always as unknown[]).includes(t)) return `${t.source.id} | always #${(always as unknown[]).indexOf(t)}`;
  const list = (t.source.transitions.get(t.eventType) ?? []) as unknown[];
  return `${t.source.id} | ${t.eventType} #${list.indexOf(t)}`;
}

/** allTransitions lists the key of every transition definition in a machine. */
export function allTransitions(machine: AnyStateMachine): string[] {
  const nodes = [machine.root, ...getStateNodes(machine.root)] as AnyStateNode[];
  return nodes.flatMap((node) =>
    [...[...node.transitions.values()].flat(), ...(node.always ?? [])].map((t) => transitionKey(t as TransitionLike)),
  );
}

/** allStates lists every state node id of a machine (the root included). */
export function allStates(machine: AnyStateMachine): string[] {
  return [machine.root, ...getStateNodes(machine.root)].map((node) => (node as AnyStateNode).id);
}

/** activeStates lists the ids of the state nodes a snapshot is in. */
export function activeStates(snapshot: AnyMachineSnapshot): string[] {
  return (snapshot._nodes as AnyStateNode[]).map((node) => node.id);
}

/** Microstep is one transition set the model or the real actor took, and the state it led to. */
export interface Microstep {
  readonly keys: readonly string[];
  readonly value: unknown;
  readonly states: readonly string[];
}

/** modelMicrosteps replays one event on the model and returns the microsteps it takes (pure; no action runs). */
export function modelMicrosteps(
  machine: AnyStateMachine,
  snapshot: AnyMachineSnapshot,
  event: AnyEventObject,
): Microstep[] {
  const self = createEmptyActor();
  const steps: Microstep[] = [];
  self.system.inspect({
    next: (e) => {
      if (e.type !== '@xstate.microstep') return;
      const taken = (e as unknown as { _transitions: TransitionLike[] })._transitions;
      const snap = e.snapshot as AnyMachineSnapshot;
      if (taken.length > 0)
        steps.push({ keys: taken.map(transitionKey), value: snap.value, states: activeStates(snap) });
    },
  });
  const scope: AnyActorScope = {
    self,
    id: 'model',
    sessionId: 'model',
    logger: () => {},
    defer: () => {},
    emit: () => {},
    system: self.system,
    stopChild: () => {},
    actionExecutor: () => {},
  };
  machine.transition(snapshot, event, scope);
  return steps;
}

/** Timers are the delayed events a path has scheduled and not yet fired or cancelled, by id. */
export type Timers = ReadonlyMap<string, { readonly type: string; readonly delay: number }>;

interface ActionLike {
  readonly type: string;
  readonly params?: {
    readonly delay?: number;
    readonly id?: string;
    readonly event?: AnyEventObject;
    readonly sendId?: string;
  };
}

/**
 * timersAlong models the scheduler along a path: the delayed raises (`after` timers, delayed
 * `raise`) and cancels in the actions of each microstep, a timer event consuming its timer.
 * The graph has no time, so this is what says whether a timer event can happen at a step.
 */
export function timersAlong(machine: AnyStateMachine, input: unknown, steps: readonly Step[]): Timers[] {
  const timers = new Map<string, { type: string; delay: number }>();
  let anonymous = 0;
  const apply = (actions: readonly ActionLike[]) => {
    for (const a of actions) {
      if (a.type === 'xstate.raise' && a.params?.delay !== undefined)
        timers.set(a.params.id ?? `#${anonymous++}`, { type: a.params.event!.type, delay: a.params.delay });
      if (a.type === 'xstate.cancel' && a.params?.sendId) timers.delete(a.params.sendId);
    }
  };
  for (const [, actions] of getInitialMicrosteps(machine, input as never)) apply(actions as readonly ActionLike[]);
  const out: Timers[] = [new Map(timers)];
  for (let i = 1; i < steps.length; i++) {
    const event = steps[i]!.event;
    const fired = [...timers].find(([, t]) => t.type === event.type);
    if (fired) timers.delete(fired[0]);
    for (const [, actions] of getMicrosteps(machine, steps[i - 1]!.state, event))
      apply(actions as readonly ActionLike[]);
    if (steps[i]!.state.status !== 'active') timers.clear();
    out.push(new Map(timers));
  }
  return out;
}

/** ModelOptions say which events exist in a state and which part of a snapshot is the state. */
export interface ModelOptions {
  readonly events: (snapshot: AnyMachineSnapshot) => AnyEventObject[];
  /** the behaviour-deciding part of the snapshot: value plus the context guards and the world read */
  readonly key: (snapshot: AnyMachineSnapshot) => unknown;
  readonly input?: unknown;
  /** paths the issue names, as event lists from the initial state */
  readonly scenarios?: Readonly<Record<string, readonly AnyEventObject[]>>;
  /** drop generated paths the world cannot execute (say why where it is used) */
  readonly feasible?: (path: Path) => boolean;
  /** also walk to every distinct state (key) reachable in at most this many events, not only every transition */
  readonly everyStateWithin?: number;
  /** also every simple path (no state twice) of the graph under this coarser key, via getSimplePaths */
  readonly simplePathsKey?: (snapshot: AnyMachineSnapshot) => unknown;
  /** which events are timers firing (default: `xstate.after.*`); a path fires only timers it has pending */
  readonly isTimer?: (type: string) => boolean;
}

const describeEvent = (event: AnyEventObject) => event.type.replace(/^xstate\./, '');
const toPath = (name: string, p: StatePath<AnyMachineSnapshot, AnyEventObject>): Path => ({
  name,
  steps: p.steps.map((s) => ({ event: s.event, state: s.state })),
});

/**
 * pathsFor builds the test paths of a machine: the named scenarios; for every transition no path
 * takes yet, the shortest path to a state where it is enabled plus that event (a transition
 * cover from getShortestPaths); optionally the shortest path to every state (everyStateWithin)
 * and every simple path of a coarser graph (getSimplePaths). Paths that fire a timer not pending
 * or that the world rejects are left out; prefixes of longer paths are dropped.
 */
export function pathsFor(
  machine: AnyStateMachine,
  options: ModelOptions,
): { paths: Path[]; model: TestModel<AnyMachineSnapshot, AnyEventObject, unknown> } {
  const serializeState = (snapshot: AnyMachineSnapshot) => JSON.stringify(options.key(snapshot));
  const model = new TestModel<AnyMachineSnapshot, AnyEventObject, unknown>(pure(machine) as never, {
    events: options.events,
    serializeState,
    serializeEvent: (event) => JSON.stringify(event),
    ...(options.input === undefined ? {} : { input: options.input }),
  });
  const isTimer = options.isTimer ?? ((type: string) => type.startsWith('xstate.after.'));
  const timersFeasible = (path: Path) => {
    const timers = timersAlong(machine, options.input, path.steps);
    return path.steps.every(
      (step, i) =>
        i === 0 || !isTimer(step.event.type) || [...timers[i - 1]!.values()].some((t) => t.type === step.event.type),
    );
  };
  const feasible = (path: Path) => timersFeasible(path) && (options.feasible ?? (() => true))(path);
  const keysOf = (steps: readonly Step[]) =>
    new Set(
      steps.slice(1).flatMap((s, i) => modelMicrosteps(machine, steps[i]!.state, s.event).flatMap((m) => m.keys)),
    );

  // States that share a key share one snapshot in the graph (whichever was seen last), so every
  // path is replayed from the initial state to get each step's exact snapshot; getPathsFromEvents
  // would do this too, but builds its start state without the input.
  const initial = machine.getInitialSnapshot(scopeFor(), options.input) as AnyMachineSnapshot;
  const fold = (name: string, events: readonly AnyEventObject[]): Step[] => {
    const steps: Step[] = [{ event: { type: 'xstate.init' }, state: initial }];
    for (const event of events) {
      const from = steps.at(-1)!.state;
      if (modelMicrosteps(machine, from, event).length === 0)
        throw new Error(`path "${name}": ${event.type} does nothing in ${JSON.stringify(from.value)}`);
      steps.push({ event, state: machine.transition(from, event, scopeFor()) });
    }
    return steps;
  };
  // The key merged states an event tells apart: that sequence is no path; another prefix will do.
  const tryFold = (events: readonly AnyEventObject[]): Step[] | null => {
    try {
      return fold('', events);
    } catch {
      return null;
    }
  };
  const named = (steps: Step[], prefix = '') => ({
    name: `${prefix}${steps
      .slice(1)
      .map((s) => describeEvent(s.event))
      .join(' → ')}`,
    steps,
  });
  const paths: Path[] = [];
  for (const [name, events] of Object.entries(options.scenarios ?? {})) {
    const steps = fold(name, events);
    if (!feasible({ name, steps })) throw new Error(`scenario "${name}" is not feasible in the world`);
    paths.push({ name, steps });
  }
  const covered = new Set(paths.flatMap((p) => [...keysOf(p.steps)]));

  // Every state's shortest path, then every enabled event from there: the candidates.
  const shortest = model.getShortestPaths({ allowDuplicatePaths: true }).map((p) => toPath('', p));
  const candidates: { steps: Step[]; keys: Set<string> }[] = [];
  for (const prefix of shortest) {
    const end = prefix.steps.at(-1)!.state;
    if (end.status !== 'active') continue;
    for (const event of options.events(end)) {
      const steps = tryFold([...prefix.steps.slice(1).map((s) => s.event), event]);
      if (!steps || !feasible({ name: '', steps })) continue;
      candidates.push({ steps, keys: keysOf(steps) });
    }
  }
  candidates.sort((a, b) => a.steps.length - b.steps.length);
  for (const key of allTransitions(machine)) {
    if (covered.has(key)) continue;
    const pick = candidates.find((c) => c.keys.has(key));
    if (!pick) continue; // reported as uncovered by the coverage check
    for (const k of pick.keys) covered.add(k);
    paths.push(named(pick.steps));
  }
  if (options.everyStateWithin) {
    for (const prefix of shortest.filter((p) => p.steps.length - 1 <= options.everyStateWithin!)) {
      const steps = tryFold(prefix.steps.slice(1).map((s) => s.event));
      if (steps && steps.length > 1 && feasible({ name: '', steps })) paths.push(named(steps));
    }
  }
  if (options.simplePathsKey) {
    const coarse = new TestModel<AnyMachineSnapshot, AnyEventObject, unknown>(pure(machine) as never, {
      events: options.events,
      serializeState: (snapshot) => JSON.stringify(options.simplePathsKey!(snapshot)),
      serializeEvent: (event) => JSON.stringify(event),
      ...(options.input === undefined ? {} : { input: options.input }),
    });
    for (const simple of coarse.getSimplePaths()) {
      const steps = tryFold(simple.steps.slice(1).map((s) => s.event));
      if (steps && steps.length > 1 && feasible({ name: '', steps })) paths.push(named(steps, 'simple: '));
    }
  }
  return { paths: dedupe(paths, Object.keys(options.scenarios ?? {}).length), model };
}

/**
 * pure is the machine with a fresh inert scope for every transition. The graph traversal shares
 * one scope whose stopChild does nothing, so a machine that restarts a child under the same
 * systemId (the supervisor) would find the old one still registered.
 */
function pure(machine: AnyStateMachine): AnyStateMachine {
  const logic = Object.create(machine) as AnyStateMachine;
  logic.transition = (snapshot, event) => machine.transition(snapshot, event, scopeFor());
  logic.getInitialSnapshot = (_scope, input) => machine.getInitialSnapshot(scopeFor(), input);
  return logic;
}

// An inert scope like the one the graph traversal uses: nothing runs, nothing is registered for long.
function scopeFor(): AnyActorScope {
  const self = createEmptyActor();
  return {
    self,
    id: '',
    sessionId: 'model',
    logger: () => {},
    defer: () => {},
    emit: () => {},
    system: self.system,
    stopChild: () => {},
    actionExecutor: () => {},
  };
}

const eventsKey = (p: Path) => p.steps.map((s) => JSON.stringify(s.event));
const isPrefix = (short: Path, long: Path) => {
  const [a, b] = [eventsKey(short), eventsKey(long)];
  return a.length <= b.length && a.every((e, i) => b[i] === e);
};

/** dedupe keeps every named scenario and drops a cover path that is a prefix of a longer kept path. */
function dedupe(paths: Path[], named: number): Path[] {
  const kept = paths.slice(0, named);
  for (const path of paths.slice(named).sort((a, b) => b.steps.length - a.steps.length)) {
    if (!kept.some((k) => isPrefix(path, k))) kept.push(path);
  }
  return kept;
}

/** Coverage collects what the model's paths and the real executions went through. */
export class Coverage {
  readonly modelKeys = new Set<string>();
  readonly realKeys = new Set<string>();
  readonly modelStates = new Set<string>();
  readonly realStates = new Set<string>();
  /** transitions that only an injected fault could produce, with why */
  readonly injected = new Map<string, string>();
  paths = 0;
  steps = 0;

  constructor(readonly machine: AnyStateMachine) {}

  /** addModelPath records the transitions and states a path takes in the model. */
  addModelPath(path: Path): void {
    this.paths++;
    this.steps += path.steps.length - 1;
    for (const id of activeStates(path.steps[0]!.state)) this.modelStates.add(id);
    path.steps.slice(1).forEach((step, i) => {
      for (const m of modelMicrosteps(this.machine, path.steps[i]!.state, step.event)) {
        for (const k of m.keys) this.modelKeys.add(k);
        for (const s of m.states) this.modelStates.add(s);
      }
    });
  }

  /** missing lists what some path or some execution did not reach. */
  missing(): { model: string[]; real: string[] } {
    const keys = allTransitions(this.machine);
    const states = allStates(this.machine);
    return {
      model: [...keys.filter((k) => !this.modelKeys.has(k)), ...states.filter((s) => !this.modelStates.has(s))],
      real: [...keys.filter((k) => !this.realKeys.has(k)), ...states.filter((s) => !this.realStates.has(s))],
    };
  }

  /** summary is the line the suite prints: paths, steps, states and transitions covered. */
  summary(): string {
    const keys = allTransitions(this.machine);
    const states = allStates(this.machine);
    const real = keys.filter((k) => this.realKeys.has(k)).length;
    const injected = this.injected.size
      ? `; ${this.injected.size} of them only through injected faults (${[...this.injected.keys()].join('; ')})`
      : '';
    return (
      `${this.machine.id}: ${this.paths} paths, ${this.steps} steps; states ` +
      `${states.filter((s) => this.realStates.has(s)).length}/${states.length}; ` +
      `transitions ${keys.filter((k) => this.modelKeys.has(k)).length}/${keys.length} in the model, ${real}/` +
      `${keys.length} executed${injected}`
    );
  }
}
