/**
 * The digest of the files nginx.conf names. nginx reads certificates and htpasswd files only when
 * it loads its config, so a renewed certificate with the same file name would never be served if
 * the config text stayed the same (the reload is skipped as already applied). Printing this
 * digest in nginx.conf makes any change of those files a change of the text, hence a reload.
 * node:crypto hashes without I/O, so buildModel stays pure.
 */
import { createHash } from 'node:crypto';
import type { Certificate } from './nginx-model.js';

/** filesDigest is a short SHA-256 over every file's name and content, in order. */
export function filesDigest(files: readonly Certificate[]): string {
  const hash = createHash('sha256');
  for (const file of files) hash.update(`${file.file}\0${file.pem ?? '(made by the controller)'}\0`);
  return hash.digest('hex').slice(0, 32);
}
