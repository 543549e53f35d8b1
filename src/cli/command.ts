import type { Logger } from '../log.js';

/** Command is one subcommand: its own flags in, an exit code out. */
export type Command = (argv: string[], io: CommandIo) => Promise<number>;

/** CommandIo is what a command may touch besides its flags: where to print, and its logger. */
export interface CommandIo {
  readonly out: NodeJS.WritableStream;
  readonly err: NodeJS.WritableStream;
  readonly log: Logger;
}
