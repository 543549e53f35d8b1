import type { ControllerConfig } from '../config.js';
import { startInspector, type Inspector } from '../inspect.js';
import type { Logger } from '../log.js';
import { startController, type Controller } from '../main.js';
import type { CommandIo } from './command.js';
import { CONTROLLER_USAGE, parseControllerFlags } from './controller-flags.js';
import { nginxBinary } from '../nginx/binary.js';
import { nginxStdout } from '../nginx/stdout.js';
import { versionText } from './version.js';

/**
 * StopSignals records SIGTERM and SIGINT from the moment a command starts, so one that comes during the start is not
 * lost.
 */
export class StopSignals {
  private stopping: NodeJS.Signals | null = null;
  private listener: ((signal: NodeJS.Signals) => void) | null = null;
  private readonly onSignal = (signal: NodeJS.Signals) => {
    this.stopping ??= signal;
    this.listener?.(signal);
  };

  constructor() {
    process.on('SIGTERM', this.onSignal);
    process.on('SIGINT', this.onSignal);
  }

  /** the first signal received, or null */
  get received(): NodeJS.Signals | null {
    return this.stopping;
  }

  /** onStop calls `listener` for every later signal, and at once if one came already. */
  onStop(listener: (signal: NodeJS.Signals) => void): void {
    this.listener = listener;
    if (this.stopping) listener(this.stopping);
  }

  dispose(): void {
    process.off('SIGTERM', this.onSignal);
    process.off('SIGINT', this.onSignal);
  }
}

/**
 * superviseController starts the inspector (when asked) and the controller, hands the started
 * controller to `started` (the demo prints its hints there), and runs until a stop signal:
 * 0 when everything stopped cleanly, 1 otherwise. A signal during the start stops it as soon as
 * the controller exists; a failed start closes the inspector before the error goes up.
 */
export async function superviseController(
  config: ControllerConfig,
  log: Logger,
  signals: StopSignals,
  err: { write(text: string): unknown },
  started: (controller: Controller, inspector: Inspector | null) => Promise<void> | void = () => {},
): Promise<number> {
  let inspector: Inspector | null = null;
  try {
    if (config.inspect || config.inspectPort !== null) {
      inspector = await startInspector({ port: config.inspectPort ?? 8080 });
      log.info({ url: inspector.url, ws: inspector.wsUrl }, 'Stately inspector: open this page in a browser');
    }
    if (signals.received) return 0;
    // nginx's access log goes to this process's stdout: the pod's `kubectl logs`.
    const nginxStdoutMode = nginxStdout(log);
    const controller = await startController(config, log, {
      nginxStdout: nginxStdoutMode,
      ...(inspector ? { inspect: inspector.inspect } : {}),
    });
    signals.onStop((signal) => {
      log.info({ signal }, 'shutting down');
      controller.stop();
    });
    // What `started` does must not leave a controller running when it fails.
    const ready = Promise.resolve()
      .then(() => started(controller, inspector))
      .then(
        () => true,
        (error: unknown) => {
          log.error({ err: error }, 'the start failed; stopping');
          controller.stop();
          return false;
        },
      );
    const ok = await Promise.race([ready, controller.exitCode.then(() => true)]);
    const code = await controller.exitCode;
    log.info({ exitCode: code }, 'exiting');
    // Why it gave up (nginx missing, a port in use, the boot config refused), in one line.
    const reason = code === 0 ? null : await controller.reason;
    if (reason) err.write(`ingress-actors: ${reason}\n`);
    return ok ? code : 1;
  } finally {
    // Let the last snapshots (stopped, exit code) reach the viewers before the relay goes.
    if (inspector) await new Promise((r) => setTimeout(r, 100)).then(() => inspector?.close());
  }
}

/**
 * runController is `ingress-actors controller`: it runs until SIGTERM or SIGINT, then shuts down
 * in order and exits 0 when everything stopped cleanly, 1 otherwise (the seed's handleSigterm).
 * With --inspect, every actor is visible live in the Stately inspector (docs/inspector.md).
 */
export async function runController(argv: string[], { out, err, log }: CommandIo): Promise<number> {
  const parsed = parseControllerFlags(argv);
  if ('help' in parsed) return (out.write(`${CONTROLLER_USAGE}\n`), 0);
  if ('version' in parsed) return (out.write(await versionText(nginxBinary())), 0);
  const { config, ignored } = parsed;
  for (const { flag, reason } of ignored) log.warn({ flag, reason }, 'ingress-nginx flag ignored');
  const signals = new StopSignals();
  try {
    return await superviseController(config, log, signals, err);
  } finally {
    signals.dispose();
  }
}
