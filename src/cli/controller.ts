import { startInspector, type Inspector } from '../inspect.js';
import { startController } from '../main.js';
import type { CommandIo } from './command.js';
import { CONTROLLER_USAGE, parseControllerFlags } from './controller-flags.js';
import { parsePort } from './flags.js';

const INSPECT_USAGE = `  --inspect-port N (8080)           where --inspect serves the Stately inspector, on 127.0.0.1`;

/** takeInspectPort removes `--inspect-port N` (or `=N`) from argv: the flag belongs to this command, not to ingress-nginx's set. */
function takeInspectPort(argv: string[]): { rest: string[]; port: number | null } {
  const rest: string[] = [];
  let port: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--inspect-port') port = argv[++i] ?? '';
    else if (arg.startsWith('--inspect-port=')) port = arg.slice('--inspect-port='.length);
    else rest.push(arg);
  }
  return { rest, port: port === undefined ? null : parsePort('--inspect-port', port, 8080) };
}

/**
 * runController is `ingress-actors controller`: it runs until SIGTERM or SIGINT, then shuts down
 * in order and exits 0 when everything stopped cleanly, 1 otherwise (the seed's handleSigterm).
 * With --inspect, every actor is visible live in the Stately inspector (docs/inspector.md).
 */
export async function runController(argv: string[], { out, log }: CommandIo): Promise<number> {
  const { rest, port } = takeInspectPort(argv);
  const parsed = parseControllerFlags(rest);
  if ('help' in parsed) return out.write(`${CONTROLLER_USAGE}\n${INSPECT_USAGE}\n`), 0;
  const { config, ignored } = parsed;
  for (const flag of ignored) log.warn({ flag }, 'flag accepted for compatibility with ingress-nginx but not implemented yet');
  let inspector: Inspector | null = null;
  if (config.inspect || port !== null) {
    inspector = await startInspector({ port: port ?? 8080 });
    log.info({ url: inspector.url, ws: inspector.wsUrl }, 'Stately inspector: open this page in a browser');
  }
  try {
    const controller = await startController(config, log, inspector ? { inspect: inspector.inspect } : {});
    const onSignal = (signal: NodeJS.Signals) => {
      log.info({ signal }, 'shutting down');
      controller.stop();
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    const code = await controller.exitCode;
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    log.info({ exitCode: code }, 'exiting');
    return code;
  } finally {
    // Let the last snapshots (stopped, exit code) reach the viewers before the relay goes.
    if (inspector) await new Promise((r) => setTimeout(r, 100)).then(() => inspector.close());
  }
}
