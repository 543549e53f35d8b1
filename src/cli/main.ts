import { ManifestError } from '../manifests/load.js';
import { UsageError } from './flags.js';
import { runDemo } from './demo.js';
import { runRender } from './render.js';

const USAGE = `Usage: ingress-actors <command> [flags]

Commands:
  render       print the nginx.conf that YAML manifests produce (see: ingress-actors render --help)
  demo         serve examples/ with a real nginx and loopback backends

Run a command with --help for its flags.`;

type Command = (argv: string[], out: NodeJS.WritableStream, err: NodeJS.WritableStream) => Promise<number>;

const COMMANDS: Record<string, Command> = {
  render: runRender,
  demo: runDemo,
};

/** main runs the CLI and returns the process exit code. */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
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
    return await command(rest, process.stdout, process.stderr);
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
