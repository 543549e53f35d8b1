import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { execa } from 'execa';

/** nginxBinary is the nginx to run: the flag, else `NGINX_BINARY` (as the seed reads it), else `nginx` on the PATH. */
export function nginxBinary(flag?: string): string {
  return flag || process.env.NGINX_BINARY || 'nginx';
}

/** TestResult is `nginx -t`'s verdict with nginx's own words. */
export interface TestResult {
  readonly ok: boolean;
  readonly output: string;
}

/**
 * NginxNotRunnableError is an nginx binary that cannot be run at all (missing, not executable): the operator's to fix.
 */
export class NginxNotRunnableError extends Error {
  override name = 'NginxNotRunnableError';
}

/**
 * whyNotRunnable looks for `binary` (a path, or a name on the PATH) as exec would: `ENOENT` when no such file,
 * `EACCES` when none of them may be executed, null when one may.
 */
export function whyNotRunnable(binary: string, path = process.env.PATH ?? ''): 'ENOENT' | 'EACCES' | null {
  const candidates = binary.includes('/') ? [binary] : path.split(delimiter).map((dir) => join(dir || '.', binary));
  let found = false;
  for (const file of candidates) {
    try {
      accessSync(file, constants.X_OK);
      return null;
    } catch (error) {
      if ((error as { code?: string }).code !== 'ENOENT') found = true;
    }
  }
  return found ? 'EACCES' : 'ENOENT';
}

/**
 * notRunnable describes a spawn failure of `binary` (ENOENT, EACCES, …) naming how to choose another, or null for
 * other errors.
 */
export function notRunnable(binary: string, code: string | undefined): NginxNotRunnableError | null {
  const why =
    code === 'ENOENT'
      ? 'was not found'
      : code === 'EACCES' || code === 'EPERM'
        ? 'is not executable'
        : code === 'ENOEXEC'
          ? 'is not a program'
          : null;
  if (why === null) return null;
  const where = binary.includes('/') ? '' : ' on the PATH';
  return new NginxNotRunnableError(
    `nginx binary ${JSON.stringify(binary)}${where} ${why} (${code}): give its path with --nginx-binary (or ` +
      'NGINX_BINARY), or put nginx on the PATH',
  );
}

/**
 * testConfig runs `nginx -t` on a config under its prefix folder; a binary that cannot be run
 * throws an NginxNotRunnableError. When `signal` aborts, the run is killed (and not ok).
 */
export async function testConfig(
  binary: string,
  prefix: string,
  conf: string,
  signal?: AbortSignal,
): Promise<TestResult> {
  // stdout is not captured: nginx -t writes its verdict to stderr, and an access log on /dev/stdout must open as the
  // master's will (a capture pipe is a socket, which open() refuses).
  const result = await execa(binary, ['-t', '-q', '-e', 'stderr', '-p', `${prefix}/`, '-c', conf], {
    reject: false,
    stdout: 'ignore',
    all: true,
    timeout: 60_000,
    ...(signal ? { cancelSignal: signal } : {}),
  });
  if (result.exitCode === undefined && !result.timedOut) {
    const cause = notRunnable(binary, (result as { code?: string }).code);
    if (cause) throw cause;
  }
  return { ok: result.exitCode === 0, output: (result.all ?? '').trim() };
}
