import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';
import { UsageError } from '../usage-error.js';

/**
 * UnsupportedFlagError is a flag this controller knows from ingress-nginx but cannot honour as given: the CLI prints
 * it and exits 1 (the command line parses; the controller refuses to run it).
 */
export class UnsupportedFlagError extends Error {
  override name = 'UnsupportedFlagError';
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
  if (!/^\d+$/.test(value) || port < 1 || port > 65535)
    throw new UsageError(`${flag} must be a port number (1-65535), not ${JSON.stringify(value)}`);
  return port;
}

/**
 * parseFlags is node:util parseArgs (strict) with the CLI's own words when it fails: which flag
 * is unknown, which one lacks its value, and the command's usage after it, instead of Node's
 * text about positionals and `--`.
 */
export function parseFlags<const T extends ParseArgsOptionsConfig>(
  args: string[],
  options: T,
  usage: string,
  allowPositionals = false,
) {
  try {
    return parseArgs({ args, options, allowPositionals, strict: true });
  } catch (error) {
    if (!(error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) throw error;
    throw new UsageError(whatIsWrong(args, options, error as Error), usage);
  }
}

/** whatIsWrong names the first argument strict parsing refused, read from the lenient parse's tokens. */
function whatIsWrong(args: string[], options: ParseArgsOptionsConfig, error: Error): string {
  const { tokens } = parseArgs({ args, options, allowPositionals: true, strict: false, tokens: true });
  for (const token of tokens) {
    if (token.kind === 'positional') return `unexpected argument ${JSON.stringify(token.value)}`;
    if (token.kind !== 'option') continue;
    const option = options[token.name];
    if (!option) return `unknown flag ${token.rawName}`;
    if (option.type === 'boolean' && token.value !== undefined) return `${token.rawName} takes no value`;
    // Strict parsing refuses a value that looks like a flag (`--out --manifests`): it was forgotten.
    if (
      option.type === 'string' &&
      (token.value === undefined || (!token.inlineValue && token.value.length > 1 && token.value.startsWith('-')))
    ) {
      return `${token.rawName} needs a value`;
    }
  }
  return error.message;
}
