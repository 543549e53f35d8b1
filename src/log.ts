import { pino, type Logger, type LevelWithSilent } from 'pino';

export type { Logger };

/** LOG_LEVELS are the values `--log-level` takes. */
export const LOG_LEVELS: readonly LevelWithSilent[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/**
 * createLogger makes the root pino logger: JSON lines on stderr (stdout belongs to commands such
 * as `render`), or pretty lines when asked and pino-pretty is installed. Each actor or module
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
    return pino({ level, redact, transport: { target: 'pino-pretty', options: { destination: 2 } } });
  }
  return pino({ level, redact }, pino.destination(2));
}
