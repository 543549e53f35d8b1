/**
 * UsageError is a command line that does not parse; the CLI prints it and exits 2. With `usage`,
 * the command's usage follows the message (a flag it does not know, a flag without its value).
 * Its own module, below src/cli/: the controller (src/main.ts, src/kube/) throws it too, and nothing imports src/cli/.
 */
export class UsageError extends Error {
  override name = 'UsageError';
  constructor(
    message: string,
    readonly usage?: string,
  ) {
    super(message);
  }
}
