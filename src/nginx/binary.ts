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

/** testConfig runs `nginx -t` on a config under its prefix folder. */
export async function testConfig(binary: string, prefix: string, conf: string): Promise<TestResult> {
  const result = await execa(binary, ['-t', '-q', '-p', `${prefix}/`, '-c', conf], { reject: false, all: true, timeout: 60_000 });
  return { ok: result.exitCode === 0, output: (result.all ?? '').trim() };
}
