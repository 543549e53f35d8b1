/**
 * The digest of the files nginx.conf names. nginx reads certificates and htpasswd files only when
 * it loads its config, so a renewed certificate with the same file name would never be served if
 * the config text stayed the same (the reload is skipped as already applied). Printing this
 * digest in nginx.conf makes any change of those files a change of the text, hence a reload.
 * node:crypto hashes without I/O, so buildModel stays pure.
 */
import { createHash } from 'node:crypto';
import type { Certificate } from './nginx-model.js';

/** each file's own digest, made once per file object (a build hands unchanged ones back): 1,000 PEMs are megabytes */
const fileDigests = new WeakMap<Certificate, string>();

function fileDigest(file: Certificate): string {
  let digest = fileDigests.get(file);
  if (digest === undefined) {
    digest = createHash('sha256')
      .update(`${file.file}\0${file.pem ?? '(made by the controller)'}\0`)
      .digest('hex');
    fileDigests.set(file, digest);
  }
  return digest;
}

/** filesDigest is a short SHA-256 over every file's name and content (each file's own digest), in order. */
export function filesDigest(files: readonly Certificate[]): string {
  let digests = '';
  for (const file of files) digests += fileDigest(file);
  return createHash('sha256').update(digests).digest('hex').slice(0, 32);
}
