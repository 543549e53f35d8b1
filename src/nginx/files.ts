import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Certificate } from '../model/nginx-model.js';
import { issueCertificate } from '../tls/issue.js';

/** writeFileAtomic writes a file beside its target and renames it into place, so readers see old or new, never half. */
export async function writeFileAtomic(path: string, content: string, mode = 0o644): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(temporary, content, { mode });
  await chmod(temporary, mode); // the umask may have narrowed or widened it
  await rename(temporary, path);
}

async function readIfExists(path: string): Promise<string | null> {
  return readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return null;
    throw error;
  });
}

/** FALLBACK_COMMON_NAME is the fallback certificate's subject, as ingress-nginx names its own. */
export const FALLBACK_COMMON_NAME = 'Kubernetes Ingress Controller Fake Certificate';

/**
 * writeCertificates writes every certificate nginx.conf names under `dir`, mode 0600 in a 0700
 * folder, before the config that names them. A certificate without PEM is the fallback: made
 * self-signed once and kept across syncs.
 */
export async function writeCertificates(dir: string, certificates: readonly Certificate[]): Promise<void> {
  await mkdir(join(dir, 'certificates'), { recursive: true, mode: 0o700 });
  for (const certificate of certificates) {
    const path = join(dir, certificate.file);
    const current = await readIfExists(path);
    let pem = certificate.pem;
    if (pem === null) {
      if (current !== null) continue;
      const made = await issueCertificate({ commonName: FALLBACK_COMMON_NAME, dnsNames: ['ingress.local'], days: 3650 });
      pem = made.certPem + made.keyPem;
    }
    if (current !== pem) await writeFileAtomic(path, pem, 0o600);
  }
}

/** prepareConfigDir makes the folders nginx.conf's relative paths name (temp files, logs). */
export async function prepareConfigDir(dir: string): Promise<void> {
  await mkdir(join(dir, 'tmp'), { recursive: true });
  await mkdir(join(dir, 'logs'), { recursive: true });
}

/** writeConfigSet writes the certificates, then nginx.conf, into `dir`, ready for `nginx -p dir/ -c dir/nginx.conf`. */
export async function writeConfigSet(dir: string, text: string, certificates: readonly Certificate[]): Promise<string> {
  await prepareConfigDir(dir);
  await writeCertificates(dir, certificates);
  const conf = join(dir, 'nginx.conf');
  await writeFileAtomic(conf, text);
  return conf;
}
