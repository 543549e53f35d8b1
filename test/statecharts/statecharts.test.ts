/**
 * `ingress-actors statecharts`: every state of every machine appears in its Mermaid text and in
 * the SVG Graphviz renders, every transition appears as an edge or an internal line, and the
 * diagrams committed under docs/statecharts/ are what the command generates today
 * (`UPDATE_DOCS=1 npx vitest run test/statecharts` rewrites them).
 */
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AnyStateMachine, AnyStateNode } from 'xstate';
import { getStateNodes } from 'xstate/graph';
import { MACHINES, renderSvg, runStatecharts, statechartFiles } from '../../src/cli/statecharts.js';
import { chartOf, eventLabel, transitionLabel } from '../../src/statecharts.js';

const DOCS = new URL('../../docs/statecharts/', import.meta.url).pathname;
// docs/statecharts holds what the command writes, for every machine.
const COMMITTED = Object.keys(MACHINES);
let out: string;

beforeAll(async () => {
  out = await mkdtemp(join(tmpdir(), 'ia-statecharts-'));
});
afterAll(() => rm(out, { recursive: true, force: true }));

/** The states and transitions straight from xstate's state nodes, not from chartOf. */
function definition(machine: AnyStateMachine) {
  const nodes = [machine.root, ...getStateNodes(machine.root)] as AnyStateNode[];
  const transitions = nodes.flatMap((node) => {
    const invokes = Object.fromEntries(node.invoke.map((i) => [i.id, typeof i.src === 'string' ? i.src : i.id]));
    return [...[...node.transitions.values()].flat(), ...(node.always ?? [])].map((t) => ({
      node,
      event: eventLabel(t.eventType, node.id, invokes),
      targets: (t.target ?? []) as AnyStateNode[],
    }));
  });
  return { nodes, transitions };
}

const mermaidId = (id: string) => id.replace(/[^A-Za-z0-9]/g, '_');
const decode = (s: string) =>
  s
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)))
    .replace(/&gt;/g, '>')
    .replace(/&lt;/g, '<')
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&');
const svgTexts = (svg: string) => [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => decode(m[1]!).trim());
const svgTitles = (svg: string) => new Set([...svg.matchAll(/<title>([^<]*)<\/title>/g)].map((m) => decode(m[1]!)));

describe.each(Object.entries(MACHINES))('%s', (name, machine) => {
  const files = statechartFiles(machine);
  const { nodes, transitions } = definition(machine);
  let svg: string;
  beforeAll(async () => {
    svg = await renderSvg(files.dot);
  });

  it('declares every state in the Mermaid diagram, and draws every transition', () => {
    expect(files.mermaid.startsWith('stateDiagram-v2\n')).toBe(true);
    for (const node of nodes.slice(1)) {
      expect(files.mermaid, node.id).toMatch(new RegExp(`state "${node.key}[^"]*" as ${mermaidId(node.id)}( \\{)?\\n`));
    }
    for (const t of transitions) {
      const shown =
        t.targets.length === 0 ? `${mermaidId(t.node.id)}` : `--> ${mermaidId(t.targets[0]!.id)} : ${t.event}`;
      expect(files.mermaid, `${t.node.id} ${t.event}`).toContain(shown);
      expect(files.mermaid, `${t.node.id} ${t.event}`).toContain(t.event);
    }
    // Every internal line and edge label is a transition of the machine: nothing invented.
    expect(chartOf(machine).transitions).toHaveLength(
      transitions.reduce((n, t) => n + Math.max(1, t.targets.length), 0),
    );
  });

  it('renders every state into the SVG, by id and by name', () => {
    expect(svg).toContain('<svg');
    const titles = svgTitles(svg);
    const texts = svgTexts(svg);
    for (const node of nodes.slice(1)) {
      const compound = Object.keys(node.states).length > 0;
      expect(titles.has(compound ? `cluster_${node.id}` : node.id), node.id).toBe(true);
      expect(texts, node.id).toContain(node.key);
    }
    for (const t of chartOf(machine).transitions) expect(texts, transitionLabel(t)).toContain(transitionLabel(t));
  });

  it.runIf(COMMITTED.includes(name))('is committed under docs/statecharts as generated', async () => {
    if (process.env.UPDATE_DOCS) {
      await writeFile(join(DOCS, `${name}.json`), files.json);
      await writeFile(join(DOCS, `${name}.mmd`), files.mermaid);
      await writeFile(join(DOCS, `${name}.dot`), files.dot);
      await writeFile(join(DOCS, `${name}.svg`), svg);
    }
    const hint = 'regenerate: ./bin/ingress-actors statecharts --out docs/statecharts (or UPDATE_DOCS=1)';
    expect(await readFile(join(DOCS, `${name}.mmd`), 'utf8'), hint).toBe(files.mermaid);
    expect(await readFile(join(DOCS, `${name}.dot`), 'utf8'), hint).toBe(files.dot);
    expect(await readFile(join(DOCS, `${name}.json`), 'utf8'), hint).toBe(files.json);
    // Graphviz versions lay out differently: the committed SVG must show every state, not match bytes.
    const committed = svgTexts(await readFile(join(DOCS, `${name}.svg`), 'utf8'));
    for (const node of nodes.slice(1)) expect(committed, node.id).toContain(node.key);
  });
});

describe('the statecharts command', () => {
  const io = () => {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let text = '';
    stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
    return { io: { out: stdout, err: stderr, log: pino({ level: 'silent' }) }, text: () => text };
  };

  it('writes JSON, Mermaid, DOT and SVG for every machine', async () => {
    const { io: cio, text } = io();
    expect(await runStatecharts(['--out', out], cio)).toBe(0);
    const written = (await readdir(out)).sort();
    expect(written).toEqual(
      Object.keys(MACHINES)
        .flatMap((n) => ['dot', 'json', 'mmd', 'svg'].map((ext) => `${n}.${ext}`))
        .sort(),
    );
    for (const name of Object.keys(MACHINES)) {
      const json = JSON.parse(await readFile(join(out, `${name}.json`), 'utf8')) as { id: string; states: object };
      expect(json.id).toBe(MACHINES[name]!.id);
      expect(await readFile(join(out, `${name}.svg`), 'utf8')).toContain('</svg>');
      expect(text()).toContain(join(out, `${name}.svg`));
    }
  });

  it('exits 1 with a hint when dot cannot be run, 2 without --out', async () => {
    const { io: cio } = io();
    let stderr = '';
    cio.err.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    expect(await runStatecharts(['--out', out, '--machine', 'template', '--dot', '/nonexistent/dot'], cio)).toBe(1);
    expect(stderr).toMatch(/install Graphviz/);
    await expect(runStatecharts([], cio)).rejects.toThrow(/--out DIR is required/);
    await expect(runStatecharts(['--out', out, '--machine', 'nope'], cio)).rejects.toThrow(/unknown machine nope/);
  });
});
