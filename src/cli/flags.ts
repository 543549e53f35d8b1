/** UsageError is a command line that does not parse; the CLI prints it with the usage and exits 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** classFlags are the flags that pick this controller's Ingresses, shared by render and controller. */
export const classFlags = {
  'ingress-class': { type: 'string' },
  'controller-class': { type: 'string' },
  'watch-ingress-without-class': { type: 'boolean' },
} as const;

/** parsePort reads a port flag, or its default. */
export function parsePort(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const port = Number(value);
  if (!/^\d+$/.test(value) || port < 1 || port > 65535) throw new UsageError(`${flag} must be a port number (1-65535), not ${JSON.stringify(value)}`);
  return port;
}
