import { startInspector, type Inspector } from '../inspect.js';
import { startController } from '../main.js';
import type { CommandIo } from './command.js';
import { CONTROLLER_USAGE, parseControllerFlags } from './controller-flags.js';

/**
 * runController is `ingress-actors controller`: it runs until SIGTERM or SIGINT, then shuts down
 * in order and exits 0 when everything stopped cleanly, 1 otherwise (the seed's handleSigterm).
 * With --inspect, every actor is visible live in the Stately inspector (docs/inspector.md).
 */
export async function runController(argv: string[], { out, err, log }: CommandIo): Promise<number> {
  const parsed = parseControllerFlags(argv);
  if ('help' in parsed) return out.write(`${CONTROLLER_USAGE}\n`), 0;
  const { config, ignored } = parsed;
  for (const flag of ignored) log.warn({ flag }, 'flag accepted for compatibility with ingress-nginx but not implemented yet');
  let inspector: Inspector | null = null;
  if (config.inspect || config.inspectPort !== null) {
    inspector = await startInspector({ port: config.inspectPort ?? 8080 });
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
    const reason = await controller.reason;
    if (code !== 0 && reason) err.write(`ingress-actors controller: ${reason}\n`);
    return code;
  } finally {
    // Let the last snapshots (stopped, exit code) reach the viewers before the relay goes.
    if (inspector) await new Promise((r) => setTimeout(r, 100)).then(() => inspector.close());
  }
}
