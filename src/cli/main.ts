import { KubeconfigError } from '../kube/kubeconfig-error.js';
import { createLogger, prettyLogs, type Logger } from '../log.js';
import type { Command } from './command.js';
import { ManifestError } from '../manifests/load.js';
import { ListenError } from '../http/listen.js';
import { UnsafePathError } from '../nginx/private-files.js';
import { UnsupportedFlagError } from './flags.js';
import { UsageError } from '../usage-error.js';
import { klogLevel } from './ingress-nginx-flags.js';

const USAGE = `Usage: ingress-actors <command> [flags]

Commands:
  controller   run the Ingress controller (see: ingress-actors controller --help)
  render       print the nginx.conf that YAML manifests produce (see: ingress-actors render --help)
  convert      turn Ingresses into Gateway API objects, listing what they cannot express (see: ingress-actors convert --help)
  demo         serve examples/ with a real nginx and loopback backends
  statecharts  write each machine's JSON definition and diagrams (see: ingress-actors statecharts --help)

Global flags: --log-level trace|debug|info|warn|error|fatal|silent (info), --log-pretty | --log-json
  (logs are readable lines when stderr is a terminal, JSON lines otherwise)
Run a command with --help, or \`ingress-actors help <command>\`, for its flags.`;

/**
 * takeLogFlags removes the global logging flags from argv, wherever they stand; klog's `--v`/`-v` (ingress-nginx's
 * verbosity) sets the level when --log-level does not.
 */
function takeLogFlags(argv: string[]): { rest: string[]; level: string; format: 'pretty' | 'json' | null } {
  const rest: string[] = [];
  let level: string | null = null;
  let verbosity: string | null = null;
  let format: 'pretty' | 'json' | null = null;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const klog = /^--?v(=(.*))?$/.exec(arg);
    if (arg === '--log-pretty') format = 'pretty';
    else if (arg === '--log-json') format = 'json';
    else if (arg === '--log-level') level = argv[++i] ?? '';
    else if (arg.startsWith('--log-level=')) level = arg.slice('--log-level='.length);
    else if (klog) {
      const value = klog[2] ?? argv[++i] ?? '';
      verbosity = klogLevel(value);
      if (verbosity === null) throw new Error(`--v must be a klog verbosity (a number), not ${JSON.stringify(value)}`);
    } else rest.push(arg);
  }
  return { rest, level: level ?? verbosity ?? 'info', format };
}

/**
 * commandOf names the command of argv: flags first (`ingress-actors --configmap=…`) and ingress-nginx's own binary name
 * as the first argument (its Helm chart's args start with `/nginx-ingress-controller`) both mean `controller`.
 */
function commandOf(argv: readonly string[]): { name: string | undefined; rest: string[] } {
  const [first, ...rest] = argv;
  if (first !== undefined && /(^|\/)nginx-ingress-controller$/.test(first)) return { name: 'controller', rest };
  if (first?.startsWith('--') && first !== '--help') return { name: 'controller', rest: [...argv] };
  return { name: first, rest };
}

/**
 * Each command's module, loaded when the command runs or its help is asked for: `render` and `convert` need neither the
 * Kubernetes client nor the actors, and start in about half the time without them.
 */
const COMMANDS: Record<string, () => Promise<{ readonly run: Command; readonly usage: string }>> = {
  controller: async () => {
    const [{ runController }, { CONTROLLER_USAGE }] = await Promise.all([
      import('./controller.js'),
      import('./controller-flags.js'),
    ]);
    return { run: runController, usage: CONTROLLER_USAGE };
  },
  render: () => import('./render.js').then((m) => ({ run: m.runRender, usage: m.RENDER_USAGE })),
  convert: () => import('./convert.js').then((m) => ({ run: m.runConvert, usage: m.CONVERT_USAGE })),
  demo: () => import('./demo.js').then((m) => ({ run: m.runDemo, usage: m.DEMO_USAGE })),
  statecharts: () => import('./statecharts.js').then((m) => ({ run: m.runStatecharts, usage: m.STATECHARTS_USAGE })),
};

/**
 * systemErrorLine spells a Node system error (a file missing, access denied) as `path: what`, or null for other errors.
 */
function systemErrorLine(error: unknown): string | null {
  const { code, path, message } = error as { code?: unknown; path?: unknown; message?: unknown };
  if (typeof code !== 'string' || typeof path !== 'string' || typeof message !== 'string') return null;
  const what = /^[A-Z0-9_]+: ([^,]+)/.exec(message)?.[1] ?? code;
  return `${path}: ${what}`;
}

/**
 * failureLine is the one line a failure the user can act on prints, with its exit code; null for a bug (its stack
 * then).
 */
function failureLine(error: unknown): { line: string; code: 1 | 2 } | null {
  if (error instanceof UsageError)
    return { line: error.usage ? `${error.message}\n\n${error.usage}` : error.message, code: 2 };
  // A folder refused as not private is the operator's to fix, as a bad flag is.
  if (error instanceof UnsafePathError) return { line: error.message, code: 2 };
  if (
    error instanceof ManifestError ||
    error instanceof ListenError ||
    error instanceof UnsupportedFlagError ||
    error instanceof KubeconfigError
  )
    return { line: error.message, code: 1 };
  const system = systemErrorLine(error);
  return system === null ? null : { line: system, code: 1 };
}

/** main runs the CLI and returns the process exit code. */
export async function main(argv: string[]): Promise<number> {
  let flags: ReturnType<typeof takeLogFlags>;
  let log: Logger;
  try {
    flags = takeLogFlags(argv);
    log = createLogger({
      level: flags.level,
      pretty: prettyLogs({ asked: flags.format, stderrIsTTY: process.stderr.isTTY }),
    });
  } catch (error) {
    process.stderr.write(`ingress-actors: ${(error as Error).message}\n`);
    return 2;
  }
  const { name, rest } = commandOf(flags.rest);
  if (name === 'help' && rest.length > 0) {
    const topic = COMMANDS[rest[0]!];
    if (!topic || rest.length > 1) {
      process.stderr.write(`ingress-actors help: unknown command ${JSON.stringify(rest.join(' '))}\n\n${USAGE}\n`);
      return 2;
    }
    process.stdout.write(`${(await topic()).usage}\n`);
    return 0;
  }
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return name === undefined ? 2 : 0;
  }
  const load = COMMANDS[name];
  if (!load) {
    process.stderr.write(`ingress-actors: unknown command ${JSON.stringify(name)}\n\n${USAGE}\n`);
    return 2;
  }
  try {
    const command = await load();
    return await command.run(rest, { out: process.stdout, err: process.stderr, log: log.child({ command: name }) });
  } catch (error) {
    const failure = failureLine(error);
    if (failure) {
      process.stderr.write(`ingress-actors ${name}: ${failure.line}\n`);
      return failure.code;
    }
    process.stderr.write(`ingress-actors ${name}: ${(error as Error).stack ?? String(error)}\n`);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
