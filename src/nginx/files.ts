import { randomBytes } from 'node:crypto';
import { chmod, chown, lstat, mkdir, readdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
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
 *
 * With a `written` memo (a long-lived caller: the sync actor), it then removes the files it no
 * longer needs (see removeStaleFiles) and returns their paths relative to `dir`; without one it
 * removes nothing (`render --out`, the nginx actor's staging), and returns [].
 */
export async function writeCertificates(dir: string, certificates: readonly Certificate[], written?: Map<string, string>): Promise<string[]> {
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
  if (!written) return [];
  const names = new Set(certificates.map((c) => c.file));
  const removed = await removeStaleFiles(dir, names, written);
  // Only a call that got this far hands its config on, so only it counts as the previous one.
  PREVIOUS.set(written, names);
  return removed;
}

/** The folders the controller writes Secret-derived files into, and the names it gives them there. */
const OWN_FILES: Readonly<Record<string, RegExp>> = { certificates: /^[^/]+\.pem$/, auth: /^[^/]+\.htpasswd$/ };

/** PREVIOUS is, per memo, the files the previous successful writeCertificates call named. */
const PREVIOUS = new WeakMap<Map<string, string>, ReadonlySet<string>>();

/**
 * removeStaleFiles deletes the controller's own files (in the memo, or named as it names them in
 * certificates/ and auth/) that no config nginx may still load names. Which configs those are:
 * the sync writes the files, then hands the text to the nginx actor, which writes it to
 * nginx.conf.next, runs `nginx -t`, renames it over nginx.conf and reloads; a refused config
 * leaves the old nginx.conf in place, and is retried until a newer one arrives; a master that
 * dies is restarted on nginx.conf. So a file stays while it is named by
 *   - the current model (the config about to be handed over),
 *   - the previous call's model (handed over, maybe not yet tested, or refused and being retried),
 *   - nginx.conf on disk (what nginx serves, and what a restarted master loads: certificates are
 *     read at load time, htpasswd files on each request), or nginx.conf.next (being tested now).
 * A file of a config that never became live goes once a newer call has been made since; a file of
 * the live config never goes while it is live. (Residual window: a reload older than the previous
 * call that has not yet written nginx.conf.next; at worst its `nginx -t` or reload fails and the
 * next config follows. Failures to delete are ignored: the next sync tries again.)
 */
async function removeStaleFiles(dir: string, current: ReadonlySet<string>, written: Map<string, string>): Promise<string[]> {
  const keep = new Set([...current, ...(PREVIOUS.get(written) ?? [])]);
  // .next before nginx.conf: a rename between the two reads then shows the new text in both, never in neither.
  // A config that cannot be read (not missing: unreadable) may name anything, so then nothing goes.
  const candidates = new Set<string>();
  for (const path of written.keys()) {
    const file = relative(dir, path).split(sep).join('/');
    const [folder, name, ...rest] = file.split('/');
    if (folder && name && rest.length === 0 && folder in OWN_FILES) candidates.add(file);
  }
  for (const [folder, pattern] of Object.entries(OWN_FILES)) {
    const entries = await readdir(join(dir, folder)).catch(() => [] as string[]);
    for (const name of entries) if (pattern.test(name)) candidates.add(`${folder}/${name}`);
  }
  for (const file of candidates) if (keep.has(file)) candidates.delete(file);
  // Most syncs have nothing to remove: then the configs (megabytes at scale) are not read at all.
  if (candidates.size === 0) return [];
  const read = async () => [await readIfExists(join(dir, 'nginx.conf.next')), await readIfExists(join(dir, 'nginx.conf'))];
  const texts = await read().catch(() => null);
  if (texts === null) return [];
  const configs = texts.filter((t): t is string => t !== null);
  const removed: string[] = [];
  for (const file of candidates) {
    if (configs.some((text) => text.includes(file))) continue;
    const path = join(dir, file);
    // Forget it first: a later model naming the same file with the same text must write it again.
    written.delete(path);
    const stat = await lstat(path).catch(() => null);
    if (!stat || stat.isDirectory()) continue;
    if (await unlink(path).then(() => true, () => false)) removed.push(file);
  }
  return removed.sort();
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
