/**
 * Statechart pictures from machine definitions: the states and transitions of an xstate machine
 * read from its state nodes (not from a hand-kept list), printed as Mermaid `stateDiagram-v2`
 * text and as Graphviz DOT with nested states as clusters. Pure: no I/O.
 */
import type { AnyStateMachine, AnyStateNode } from 'xstate';

/** ChartState is one state node as the diagrams show it. */
export interface ChartState {
  /** the state node's id, `nginxProcess.alive.stopping` (the machine root is the machine id) */
  readonly id: string;
  readonly key: string;
  readonly kind: 'atomic' | 'compound' | 'parallel' | 'final' | 'history';
  readonly parent: string | null;
  /** the child entered first, if compound */
  readonly initial: string | null;
  readonly children: readonly string[];
  /** what the state runs while active: `invoke master`, `entry takePending` */
  readonly notes: readonly string[];
}

/** ChartTransition is one transition definition, guarded alternatives counted separately. */
export interface ChartTransition {
  readonly source: string;
  /** null for a transition without target (it only runs actions, or blocks an outer handler) */
  readonly target: string | null;
  /** the event as a reader says it: `nginx.exited`, `after(shutdownTimeout)`, `done(reload)`, `always` */
  readonly event: string;
  readonly guard: string | null;
  readonly actions: readonly string[];
}

/** Chart is a machine's states (root first, depth first) and transitions. */
export interface Chart {
  readonly id: string;
  readonly states: readonly ChartState[];
  readonly transitions: readonly ChartTransition[];
}

function nameOf(thing: unknown): string {
  if (typeof thing === 'string') return thing;
  // Built-in action creators are functions that carry their type (`xstate.raise`).
  if ((typeof thing === 'object' || typeof thing === 'function') && thing !== null && 'type' in thing)
    return String(thing.type);
  if (typeof thing === 'function') return thing.name || 'inline';
  return 'inline';
}

// Delayed transitions are raised events; the raise itself is no action a reader needs to see.
const hiddenActions = new Set(['xstate.raise', 'xstate.cancel']);
const actionName = (action: unknown) =>
  nameOf(action).replace(/^xstate\.(assign|sendTo|raise|log|emit|spawnChild|stopChild|enqueueActions)$/, '$1');

/**
 * eventLabel shortens xstate's internal event names: `xstate.after.debounce.syncQueue.pending` →
 * `after(debounce)`, `xstate.done.actor.0.status.follower.campaigning` → `done(acquireLease)`
 * when `invokes` names that invocation's source.
 */
export function eventLabel(
  eventType: string,
  sourceId: string,
  invokes: Readonly<Record<string, string>> = {},
): string {
  if (eventType === '') return 'always';
  const after = /^xstate\.after\.(.+)$/.exec(eventType);
  if (after)
    return `after(${after[1]!.endsWith(`.${sourceId}`) ? after[1]!.slice(0, -sourceId.length - 1) : after[1]})`;
  const actor = /^xstate\.(done|error)\.actor\.(.+)$/.exec(eventType) ?? /^xstate\.(snapshot)\.(.+)$/.exec(eventType);
  if (actor) return `${actor[1]}(${invokes[actor[2]!] ?? actor[2]})`;
  if (eventType.startsWith('xstate.done.state.')) return 'done';
  return eventType;
}

/** chartOf reads a machine's states and transitions from its state nodes. */
export function chartOf(machine: AnyStateMachine): Chart {
  const states: ChartState[] = [];
  const transitions: ChartTransition[] = [];
  const visit = (node: AnyStateNode, parent: string | null) => {
    const children = Object.values(node.states) as AnyStateNode[];
    const notes = [
      ...node.invoke.map((invoke) => `invoke ${nameOf(invoke.src)}`),
      ...node.entry.filter((a) => !hiddenActions.has(nameOf(a))).map((a) => `entry ${actionName(a)}`),
      ...node.exit.filter((a) => !hiddenActions.has(nameOf(a))).map((a) => `exit ${actionName(a)}`),
    ];
    // An invocation without an id gets a generated one; its done/error events read better by source.
    const invokes = Object.fromEntries(node.invoke.map((invoke) => [invoke.id, nameOf(invoke.src)]));
    states.push({
      id: node.id,
      key: node.key,
      kind: node.type,
      parent,
      initial: node.initial?.target[0]?.id ?? null,
      children: children.map((c) => c.id),
      notes,
    });
    const all = [...[...node.transitions.values()].flat(), ...(node.always ?? [])];
    for (const t of all) {
      const base = {
        source: node.id,
        event: eventLabel(t.eventType, node.id, invokes),
        guard: t.guard ? nameOf(t.guard) : null,
        actions: t.actions.filter((a) => !hiddenActions.has(nameOf(a))).map(actionName),
      };
      const targets = t.target ?? [];
      if (targets.length === 0) transitions.push({ ...base, target: null });
      for (const target of targets) transitions.push({ ...base, target: target.id });
    }
    for (const child of children) visit(child, node.id);
  };
  visit(machine.root, null);
  return { id: machine.id, states, transitions };
}

/** transitionLabel is `event [guard]`, with `/ actions` for transitions that only run actions. */
export function transitionLabel(t: ChartTransition): string {
  const guard = t.guard ? ` [${t.guard}]` : '';
  const actions = t.target === null ? ` / ${t.actions.length ? t.actions.join(', ') : 'ignored'}` : '';
  return `${t.event}${guard}${actions}`;
}

const isAncestor = (chart: Chart, ancestor: string, id: string): boolean => {
  for (let s = chart.states.find((x) => x.id === id); s?.parent; s = chart.states.find((x) => x.id === s!.parent)) {
    if (s.parent === ancestor) return true;
  }
  return false;
};

/**
 * anyNode is the pseudo-state drawn inside a compound state (or the machine) for what holds in
 * every one of its substates: handlers of the compound itself that target one of its own
 * substates, and handlers that only run actions. Neither Mermaid nor dot draws an edge from a
 * box to something inside it.
 */
const anyId = (id: string) => `${id}.(any)`;
const needsAny = (chart: Chart, t: ChartTransition): boolean => {
  const source = chart.states.find((s) => s.id === t.source)!;
  if (source.children.length === 0) return false;
  return t.target === null || t.target === t.source || isAncestor(chart, t.source, t.target);
};

function mermaidId(id: string): string {
  return id.replace(/[^A-Za-z0-9]/g, '_');
}

// Mermaid treats `:` and `;` as syntax and `"` ends a label.
const mermaidText = (text: string) => text.replace(/[:;"]/g, ' ');

/** toMermaid prints a chart as Mermaid `stateDiagram-v2`; every state is declared with its key as label. */
export function toMermaid(chart: Chart): string {
  const lines = ['stateDiagram-v2'];
  const byId = new Map(chart.states.map((s) => [s.id, s]));
  const ancestors = (id: string): string[] => {
    const out: string[] = [];
    for (let s = byId.get(id); s?.parent; s = byId.get(s.parent)) out.push(s.parent);
    return out;
  };
  // The compounds an edge end sits in, innermost first; an "any" node sits in its own compound.
  const containers = (end: string) =>
    end.endsWith('.(any)') ? [end.slice(0, -6), ...ancestors(end.slice(0, -6))] : ancestors(end);
  const edgeSource = (t: ChartTransition) => (needsAny(chart, t) ? anyId(t.source) : t.source);
  // Mermaid nests by block: an edge is written in the innermost compound holding both ends.
  const home = (t: ChartTransition) =>
    containers(edgeSource(t)).find((id) => containers(t.target!).includes(id)) ?? chart.id;
  const emit = (state: ChartState, depth: number) => {
    const pad = '  '.repeat(depth);
    const id = mermaidId(state.id);
    if (state.children.length === 0) {
      lines.push(`${pad}state "${mermaidText(state.key)}" as ${id}`);
      const own = chart.transitions.filter((t) => t.source === state.id && t.target === null).map(transitionLabel);
      for (const note of [...state.notes, ...own]) lines.push(`${pad}${id} : ${mermaidText(note)}`);
      if (state.kind === 'final') lines.push(`${pad}${id} --> [*]`);
      return;
    }
    const nested = state.parent !== null;
    if (nested) lines.push(`${pad}state "${mermaidText([state.key, ...state.notes].join(' · '))}" as ${id} {`);
    const inner = nested ? `${pad}  ` : pad;
    if (state.initial) lines.push(`${inner}[*] --> ${mermaidId(state.initial)}`);
    const loose = chart.transitions.filter((t) => t.source === state.id && needsAny(chart, t));
    if (loose.length > 0) {
      const any = mermaidId(anyId(state.id));
      lines.push(`${inner}state "any ${nested ? `${mermaidText(state.key)} substate` : 'state'}" as ${any}`);
      for (const t of loose.filter((x) => x.target === null))
        lines.push(`${inner}${any} : ${mermaidText(transitionLabel(t))}`);
    }
    state.children.forEach((child, i) => {
      // Mermaid separates the regions of a parallel state with `--`.
      if (state.kind === 'parallel' && i > 0) lines.push(`${inner}--`);
      emit(byId.get(child)!, nested ? depth + 1 : depth);
    });
    for (const t of chart.transitions.filter((x) => x.target !== null && home(x) === state.id)) {
      lines.push(
        `${inner}${mermaidId(edgeSource(t))} --> ${mermaidId(t.target!)} : ${mermaidText(transitionLabel(t))}`,
      );
    }
    if (nested) lines.push(`${pad}}`);
  };
  emit(chart.states[0]!, 1);
  return `${lines.join('\n')}\n`;
}

const dotString = (text: string) => `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

/**
 * toDot prints a chart as Graphviz DOT: atomic states are rounded boxes named by their state id,
 * compound states are clusters `cluster_<id>` holding an invisible anchor node `<id>` that edges
 * to and from the compound attach to (with lhead/ltail, so they end at the cluster's border).
 */
export function toDot(chart: Chart): string {
  const lines = [
    `digraph ${dotString(chart.id)} {`,
    '  compound=true; rankdir=TB; newrank=true; nodesep=0.4; ranksep=0.5; fontname="Helvetica"; fontsize=12;',
    '  node [shape=box, style=rounded, fontname="Helvetica", fontsize=11];',
    '  edge [fontname="Helvetica", fontsize=9];',
  ];
  const byId = new Map(chart.states.map((s) => [s.id, s]));
  const compound = (id: string) => (byId.get(id)?.children.length ?? 0) > 0;
  const emit = (state: ChartState, depth: number) => {
    const pad = '  '.repeat(depth);
    if (state.children.length > 0) {
      lines.push(`${pad}subgraph ${dotString(`cluster_${state.id}`)} {`);
      // The regions of a parallel state are dashed, as in UML.
      const region = state.parent !== null && byId.get(state.parent)?.kind === 'parallel';
      lines.push(
        `${pad}  label=${dotString([state.key, ...state.notes].join('\n'))}; style=` +
          `${region ? '"rounded,dashed"' : 'rounded'};`,
      );
      lines.push(`${pad}  ${dotString(state.id)} [shape=point, style=invis, width=0.01, label=""];`);
      if (state.initial)
        lines.push(`${pad}  ${dotString(`${state.id}.(initial)`)} [shape=point, width=0.12, label=""];`);
      const loose = chart.transitions.filter((t) => t.source === state.id && needsAny(chart, t));
      if (loose.length > 0) {
        const text = [
          `any ${state.parent === null ? 'state' : `${state.key} substate`}`,
          ...loose.filter((t) => t.target === null).map(transitionLabel),
        ];
        lines.push(
          `${pad}  ${dotString(anyId(state.id))} [shape=note, style="", fontsize=9, label=` +
            `${dotString(text.join('\n'))}];`,
        );
      }
      for (const child of state.children) emit(byId.get(child)!, depth + 1);
      lines.push(`${pad}}`);
      return;
    }
    const own = chart.transitions.filter((t) => t.source === state.id && t.target === null).map(transitionLabel);
    const label = [state.key, ...state.notes, ...own].join('\n');
    const shape = state.kind === 'final' ? ', peripheries=2' : '';
    lines.push(`${pad}${dotString(state.id)} [label=${dotString(label)}${shape}];`);
  };
  emit(chart.states[0]!, 1);
  for (const state of chart.states.filter((s) => s.initial)) {
    const head = compound(state.initial!) ? `, lhead=${dotString(`cluster_${state.initial}`)}` : '';
    lines.push(`  ${dotString(`${state.id}.(initial)`)} -> ${dotString(state.initial!)} [arrowsize=0.6${head}];`);
  }
  // Transitions between the same two boxes share one edge, one label line each.
  const edges = new Map<string, { from: string; to: string; attrs: string[]; labels: string[] }>();
  for (const t of chart.transitions.filter((x) => x.target !== null)) {
    const viaAny = needsAny(chart, t);
    const from = viaAny ? anyId(t.source) : t.source;
    const attrs: string[] = [];
    if (!viaAny && compound(t.source)) attrs.push(`ltail=${dotString(`cluster_${t.source}`)}`);
    if (compound(t.target!) && !isAncestor(chart, t.target!, from.replace(/\.\(any\)$/, '')) && t.target !== t.source) {
      attrs.push(`lhead=${dotString(`cluster_${t.target}`)}`);
    }
    const key = `${from}\u0000${t.target}`;
    const edge = edges.get(key) ?? { from, to: t.target!, attrs, labels: [] };
    edge.labels.push(transitionLabel(t));
    edges.set(key, edge);
  }
  for (const { from, to, attrs, labels } of edges.values()) {
    lines.push(
      `  ${dotString(from)} -> ${dotString(to)} [${[`label=${dotString(labels.join('\n'))}`, ...attrs].join(', ')}];`,
    );
  }
  lines.push('}');
  return `${lines.join('\n')}\n`;
}
