import { randomBytes } from 'node:crypto';
import { chmod, chown, mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Certificate } from '../model/nginx-model.js';
import { issueCertificate } from '../tls/issue.js';

/**
 * writeFileAtomic writes a file beside its target and renames it into place, so readers see old
 * or new, never half. A write that fails (ENOSPC on a full disk) removes its temporary file, which
 * would otherwise keep the space it got and pile up, one more per failed attempt.
 */
export async function writeFileAtomic(path: string, content: string, mode = 0o644): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await writeFile(temporary, content, { mode });
    await chmod(temporary, mode); // the umask may have narrowed or widened it
    await rename(temporary, path);
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
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
 * workerOwner is who must read files nginx opens per request (htpasswd): when the master runs as
 * root its workers run as `nobody` (no `user` directive here), otherwise as the master's user.
 */
async function workerOwner(): Promise<{ uid: number; gid: number } | null> {
  if (process.getuid?.() !== 0) return null;
  const passwd = await readFile('/etc/passwd', 'utf8').catch(() => '');
  const [, , uid, gid] = passwd.split('\n').find((line) => line.startsWith('nobody:'))?.split(':') ?? [];
  return uid && gid ? { uid: Number(uid), gid: Number(gid) } : { uid: 65534, gid: 65534 };
}

/**
 * writeCertificates writes every Secret-derived file nginx.conf names under `dir` (certificates,
 * htpasswd files), mode 0600 in 0700 folders, before the config that names them. A certificate
 * without PEM is the fallback: made self-signed once and kept across syncs. Certificates are read
 * by the master; htpasswd files by the workers, so under a root master they belong to `nobody`.
 */
export async function writeCertificates(dir: string, certificates: readonly Certificate[], written?: Map<string, string>): Promise<void> {
  await mkdir(join(dir, 'certificates'), { recursive: true, mode: 0o700 });
  for (const certificate of certificates) {
    const path = join(dir, certificate.file);
    // A long-lived caller remembers what it wrote, so an unchanged file costs no read per sync.
    if (certificate.pem !== null && written?.get(path) === certificate.pem) continue;
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    const current = await readIfExists(path);
    let pem = certificate.pem;
    if (pem === null) {
      if (current !== null) continue;
      const made = await issueCertificate({ commonName: FALLBACK_COMMON_NAME, dnsNames: ['ingress.local'], days: 3650 });
      pem = made.certPem + made.keyPem;
    }
    if (current !== pem) await writeFileAtomic(path, pem, 0o600);
    const owner = certificate.file.startsWith('auth/') ? await workerOwner() : null;
    if (owner) {
      await chown(dirname(path), owner.uid, owner.gid);
      await chown(path, owner.uid, owner.gid);
    }
    if (certificate.pem !== null) written?.set(path, certificate.pem);
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
