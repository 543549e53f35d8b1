import { rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Certificate } from '../model/nginx-model.js';
import { testConfig } from './binary.js';
import { sweepStaleFiles, writeCertificates, writeFileAtomic } from './files.js';

/**
 * ApplyResult says whether a config is now the live nginx.conf, with nginx's words when not; when
 * it is, `removed` lists the Secret-derived files no config names any more, now deleted.
 */
export type ApplyResult =
  | { readonly ok: true; readonly conf: string; readonly timings: StageTimings; readonly removed: readonly string[] }
  | { readonly ok: false; readonly error: string };

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
 * folders are checked and the certificates written first (see prepareConfigDir, ConfigLayout),
 * the config beside the live one, tested there, then renamed over it. A config nginx refuses
 * never replaces the live one. Once it is live, files only older configs named are removed.
 */
export async function stageConfig(binary: string, dir: string, text: string, certificates: readonly Certificate[]): Promise<ApplyResult> {
  const started = performance.now();
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
  const removed = await sweepStaleFiles(dir);
  return { ok: true, conf: live, removed, timings: { writeMs: written - started + (performance.now() - tested), testMs: tested - written } };
}
