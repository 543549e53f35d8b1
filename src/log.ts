import { pino, type Logger, type LevelWithSilent } from 'pino';
import pretty from 'pino-pretty';

export type { Logger };

/** LOG_LEVELS are the values `--log-level` takes. */
export const LOG_LEVELS: readonly LevelWithSilent[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/**
 * prettyLogs decides the log format: what a flag asks (`--log-pretty`, `--log-json`), else readable lines when
 * stderr is a terminal (someone reads them) and JSON lines otherwise (a pod's log, a pipe, a file: machines read them).
 */
export function prettyLogs(options: { asked: 'pretty' | 'json' | null; stderrIsTTY: boolean | undefined }): boolean {
  return options.asked === null ? options.stderrIsTTY === true : options.asked === 'pretty';
}

/**
 * createLogger makes the root pino logger: JSON lines on stderr (stdout belongs to commands such
 * as `render`), or readable lines when `pretty` (see prettyLogs). Each actor or module
 * takes a child: `logger.child({ actor: 'nginx' })`. Keys that could hold secrets are redacted.
 */
export function createLogger(options: { level?: string; pretty?: boolean } = {}): Logger {
  const level = (options.level ?? 'info') as LevelWithSilent;
  if (!LOG_LEVELS.includes(level))
    throw new Error(`--log-level must be one of ${LOG_LEVELS.join(', ')}, not ${JSON.stringify(options.level)}`);
  const redact = {
    paths: ['*.data', '*.stringData', '*.pem', '*.keyPem', '*.token', '*.password'],
    censor: '[redacted]',
  };
  if (options.pretty) {
    // Written in this thread, synchronously (no transport worker): the last lines before an exit are not lost.
    const lines = { singleLine: true, ignore: 'pid,hostname,command', translateTime: 'HH:MM:ss' };
    return pino({ level, redact }, pretty({ ...lines, destination: 2, sync: true }));
  }
  return pino({ level, redact }, pino.destination(2));
}
