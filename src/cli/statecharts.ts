import { execa } from 'execa';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { AnyStateMachine } from 'xstate';
import { nginxProcessMachine } from '../../machines/nginxProcess.machine.js';
import { resourceWatcherMachine } from '../../machines/resourceWatcher.machine.js';
import { rootSupervisorMachine } from '../../machines/rootSupervisor.machine.js';
import { statusMachine } from '../../machines/status.machine.js';
import { syncQueueMachine } from '../../machines/syncQueue.machine.js';
import { templateMachine } from '../../machines/template.machine.js';
import { webhookCertificateMachine } from '../../machines/webhookCertificate.machine.js';
import { chartOf, toDot, toMermaid } from '../statecharts.js';
import type { CommandIo } from './command.js';
import { parseFlags } from './flags.js';
import { UsageError } from '../usage-error.js';

/** MACHINES are the statecharts the command draws, by file name: the definitions the controller runs. */
export const MACHINES: Readonly<Record<string, AnyStateMachine>> = {
  rootSupervisor: rootSupervisorMachine,
  nginxProcess: nginxProcessMachine,
  syncQueue: syncQueueMachine,
  template: templateMachine,
  resourceWatcher: resourceWatcherMachine,
  status: statusMachine,
  webhookCertificate: webhookCertificateMachine,
};

/** STATECHARTS_USAGE is the command's --help text. */
export const STATECHARTS_USAGE =
  'Usage: ingress-actors statecharts --out DIR ' +
  `[--machine NAME]... [--dot PATH] [--no-svg]

Writes, for each machine (${Object.keys(MACHINES).join(', ')}):
  NAME.json  its definition (machine.toJSON()), for Stately Studio and other tools
  NAME.mmd   a Mermaid stateDiagram-v2
  NAME.dot   the same chart in Graphviz DOT, nested states as clusters
  NAME.svg   that DOT rendered by Graphviz dot (--dot, default: dot on the PATH)`;

/** StatechartFiles are the texts written for one machine. */
export interface StatechartFiles {
  readonly json: string;
  readonly mermaid: string;
  readonly dot: string;
}

/** statechartFiles renders one machine's JSON, Mermaid and DOT texts (deterministic: same machine, same bytes). */
export function statechartFiles(machine: AnyStateMachine): StatechartFiles {
  const chart = chartOf(machine);
  return { json: `${JSON.stringify(machine.toJSON(), null, 2)}\n`, mermaid: toMermaid(chart), dot: toDot(chart) };
}

/** renderSvg runs Graphviz dot on a DOT text and returns the SVG. */
export async function renderSvg(dot: string, binary = 'dot'): Promise<string> {
  const result = await execa(binary, ['-Tsvg'], { input: dot, reject: false, timeout: 60_000 });
  if (result.failed || result.exitCode !== 0) {
    const why =
      result.code === 'ENOENT'
        ? `${binary} not found: install Graphviz (Debian: apt-get install graphviz) or pass --no-svg`
        : result.stderr;
    throw new Error(`cannot render SVG with ${binary}: ${why}`);
  }
  return result.stdout.endsWith('\n') ? result.stdout : `${result.stdout}\n`;
}

/** runStatecharts is `ingress-actors statecharts --out DIR`: exit 0 once every file is written, 1 if dot failed. */
export async function runStatecharts(argv: string[], { out, err }: CommandIo): Promise<number> {
  const { values } = parseFlags(
    argv,
    {
      out: { type: 'string' },
      machine: { type: 'string', multiple: true },
      dot: { type: 'string' },
      'no-svg': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    STATECHARTS_USAGE,
  );
  if (values.help) return (out.write(`${STATECHARTS_USAGE}\n`), 0);
  if (!values.out) throw new UsageError('--out DIR is required', STATECHARTS_USAGE);
  const names = values.machine ?? Object.keys(MACHINES);
  const unknown = names.filter((name) => !(name in MACHINES));
  if (unknown.length > 0)
    throw new UsageError(`unknown machine ${unknown.join(', ')}; known: ${Object.keys(MACHINES).join(', ')}`);
  const dir = resolve(values.out);
  await mkdir(dir, { recursive: true });
  for (const name of names) {
    const files = statechartFiles(MACHINES[name]!);
    await writeFile(join(dir, `${name}.json`), files.json);
    await writeFile(join(dir, `${name}.mmd`), files.mermaid);
    await writeFile(join(dir, `${name}.dot`), files.dot);
    const written = [`${name}.json`, `${name}.mmd`, `${name}.dot`];
    if (!values['no-svg']) {
      try {
        await writeFile(join(dir, `${name}.svg`), await renderSvg(files.dot, values.dot));
        written.push(`${name}.svg`);
      } catch (error) {
        err.write(`ingress-actors statecharts: ${(error as Error).message}\n`);
        return 1;
      }
    }
    out.write(`${written.map((file) => join(dir, file)).join('\n')}\n`);
  }
  return 0;
}
