import { rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Certificate } from '../model/nginx-model.js';
import { testConfig } from './binary.js';
import { prepareConfigDir, writeCertificates, writeFileAtomic } from './files.js';

/** ApplyResult says whether a config is now the live nginx.conf, with nginx's words when not. */
export type ApplyResult = { readonly ok: true; readonly conf: string; readonly timings: StageTimings } | { readonly ok: false; readonly error: string };

/** ConfigRefusedError is a reload's failure because `nginx -t` refused the config; `output` is nginx's words. */
export class ConfigRefusedError extends Error {
  constructor(readonly output: string) {
    super(`nginx -t refused the new config, the old one stays:\n${output}`);
    this.name = 'ConfigRefusedError';
  }
}

/** StageTimings are how long staging took, for the reload log: writing the files, and `nginx -t`. */
export interface StageTimings {
  readonly writeMs: number;
  readonly testMs: number;
}

/**
 * stageConfig makes `text` the live nginx.conf in `dir` only if `nginx -t` accepts it: the
 * certificates are written first (0600), the config beside the live one, tested there, then
 * renamed over it. A config nginx refuses never replaces the live one.
 */
export async function stageConfig(binary: string, dir: string, text: string, certificates: readonly Certificate[]): Promise<ApplyResult> {
  const started = performance.now();
  await prepareConfigDir(dir);
  await writeCertificates(dir, certificates);
  const live = join(dir, 'nginx.conf');
  const next = join(dir, 'nginx.conf.next');
  await writeFileAtomic(next, text);
  const written = performance.now();
  const verdict = await testConfig(binary, dir, next);
  const tested = performance.now();
  if (!verdict.ok) {
    await unlink(next).catch(() => undefined);
    return { ok: false, error: verdict.output };
  }
  await rename(next, live);
  return { ok: true, conf: live, timings: { writeMs: written - started + (performance.now() - tested), testMs: tested - written } };
}
