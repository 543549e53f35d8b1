import { createLogger, type Logger } from '../log.js';
import type { Command } from './command.js';
import { ManifestError } from '../manifests/load.js';
import { UsageError } from './flags.js';
import { runController } from './controller.js';
import { runDemo } from './demo.js';
import { runRender } from './render.js';
import { runStatecharts } from './statecharts.js';

const USAGE = `Usage: ingress-actors <command> [flags]

Commands:
  controller   run the Ingress controller (see: ingress-actors controller --help)
  render       print the nginx.conf that YAML manifests produce (see: ingress-actors render --help)
  demo         serve examples/ with a real nginx and loopback backends
  statecharts  write each machine's JSON definition and diagrams (see: ingress-actors statecharts --help)

Global flags: --log-level trace|debug|info|warn|error|fatal|silent (info), --log-pretty
Run a command with --help for its flags.`;

/** takeLogFlags removes the global logging flags from argv, wherever they stand. */
function takeLogFlags(argv: string[]): { rest: string[]; level: string; pretty: boolean } {
  const rest: string[] = [];
  let level = 'info';
  let pretty = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--log-pretty') pretty = true;
    else if (arg === '--log-level') level = argv[++i] ?? '';
    else if (arg.startsWith('--log-level=')) level = arg.slice('--log-level='.length);
    else rest.push(arg);
  }
  return { rest, level, pretty };
}

const COMMANDS: Record<string, Command> = {
  controller: runController,
  render: runRender,
  demo: runDemo,
  statecharts: runStatecharts,
};

/** main runs the CLI and returns the process exit code. */
export async function main(argv: string[]): Promise<number> {
  let flags: ReturnType<typeof takeLogFlags>;
  let log: Logger;
  try {
    flags = takeLogFlags(argv);
    log = createLogger({ level: flags.level, pretty: flags.pretty });
  } catch (error) {
    process.stderr.write(`ingress-actors: ${(error as Error).message}\n`);
    return 2;
  }
  const [name, ...rest] = flags.rest;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`ingress-actors: unknown command ${JSON.stringify(name)}\n\n${USAGE}\n`);
    return 2;
  }
  try {
    return await command(rest, { out: process.stdout, err: process.stderr, log: log.child({ command: name }) });
  } catch (error) {
    if (error instanceof ManifestError) {
      process.stderr.write(`ingress-actors ${name}: ${error.message}\n`);
      return 1;
    }
    if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`ingress-actors ${name}: ${(error as Error).message}\n`);
      return 2;
    }
    process.stderr.write(`ingress-actors ${name}: ${(error as Error).stack ?? String(error)}\n`);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
