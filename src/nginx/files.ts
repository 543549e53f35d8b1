import { lstat, mkdir, readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import type { Certificate } from '../model/nginx-model.js';
import { issueCertificate } from '../tls/issue.js';
import { ensurePrivateDir, removeLinkAt, removeOwnFile, UnsafePathError, workerIdentity, writePrivateFile, type Access } from './private-files.js';

/**
 * writeFileAtomic writes a file of this process only (0600 unless told), beside its target and
 * renamed into place, so readers see old or new, never half (see writePrivateFile).
 */
export async function writeFileAtomic(path: string, content: string, mode = 0o600): Promise<void> {
  await writePrivateFile(path, content, { mode });
}

async function readIfExists(path: string): Promise<string | null> {
  return readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return null;
    throw error;
  });
}

const isFile = (path: string) => lstat(path).then((stat) => stat.isFile(), () => false);

/** FALLBACK_COMMON_NAME is the fallback certificate's subject, as ingress-nginx names its own. */
export const FALLBACK_COMMON_NAME = 'Kubernetes Ingress Controller Fake Certificate';

/**
 * ConfigLayout is who may reach what under the config folder. Certificates and keys are read by
 * the master only: 0600 in a 0700 folder. nginx's workers need the htpasswd files (read per
 * request) and the temp and log folders (nginx makes tmp/proxy and the like itself, owned by the
 * worker user), so when they run as another user (a root master's `nobody`) those are shared
 * with the workers' group alone: the config folder and tmp/, logs/ 0710 (pass through, no
 * listing, no writing), auth/ 0750 and its files 0640, all owned by this process. Nothing is
 * ever given to the workers' user, so a worker can write nowhere the master reads.
 */
export interface ConfigLayout {
  readonly root: Access;
  readonly folders: Readonly<Record<'certificates' | 'auth' | 'tmp' | 'logs', Access>>;
  readonly files: Readonly<Record<'certificates' | 'auth', Access>>;
}

/** configLayout is the layout for workers of `worker`'s group, or for workers of this process's own user (null). */
export function configLayout(worker: { gid: number } | null): ConfigLayout {
  const shared = (mode: number): Access => (worker ? { mode, gid: worker.gid } : { mode: 0o700 });
  return {
    root: shared(0o710),
    folders: { certificates: { mode: 0o700 }, auth: shared(0o750), tmp: shared(0o710), logs: shared(0o710) },
    files: { certificates: { mode: 0o600 }, auth: worker ? { mode: 0o640, gid: worker.gid } : { mode: 0o600 } },
  };
}

let layout: Promise<ConfigLayout> | null = null;
const currentLayout = () => (layout ??= workerIdentity().then(configLayout));

/**
 * prepareConfigDir makes `dir` and the folders nginx.conf's relative paths name (certificates,
 * auth, temp files, logs) private to this process and nginx's workers (see ConfigLayout), or
 * refuses with an UnsafePathError. A link where nginx writes its pid file is removed.
 */
export async function prepareConfigDir(dir: string): Promise<ConfigLayout> {
  const access = await currentLayout();
  await mkdir(dirname(resolve(dir)), { recursive: true });
  await ensurePrivateDir(dir, access.root);
  for (const [folder, folderAccess] of Object.entries(access.folders)) await ensurePrivateDir(join(dir, folder), folderAccess);
  await removeLinkAt(join(dir, 'nginx.pid'));
  return access;
}

/**
 * ensureConfigDir is prepareConfigDir for the folder a flag named: what is wrong with it names the
 * flag (`--config-dir /tmp/x: /tmp/x is owned by uid 65534, ...`).
 */
export async function ensureConfigDir(dir: string, flag = '--config-dir'): Promise<void> {
  try {
    await prepareConfigDir(dir);
  } catch (error) {
    if (error instanceof UnsafePathError) throw new UnsafePathError(`${flag} ${dir}: ${error.message}`);
    throw error;
  }
}

/** The folders the controller writes Secret-derived files into, and the names it gives them there. */
const OWN_FILES: Readonly<Record<'certificates' | 'auth', RegExp>> = { certificates: /^[^/]+\.pem$/, auth: /^[^/]+\.htpasswd$/ };

function ownFolder(file: string): 'certificates' | 'auth' {
  const [folder, name, ...rest] = file.split('/');
  if ((folder === 'certificates' || folder === 'auth') && name && name !== '..' && name !== '.' && rest.length === 0) return folder;
  throw new UnsafePathError(`${JSON.stringify(file)} is not a file of certificates/ or auth/`);
}

/**
 * Ledger is what a long-lived caller (the sync actor, with its memo) wrote into one folder: the
 * memo, and the files its latest call named. One per folder, so that staging can sweep too.
 */
interface Ledger {
  readonly written: Map<string, string>;
  latest: ReadonlySet<string>;
}
const LEDGERS = new Map<string, Ledger>();

/** Writes and removals in one folder take turns: a sweep must not remove what a write in progress just wrote. */
const TURNS = new Map<string, Promise<unknown>>();
function inTurn<T>(dir: string, work: () => Promise<T>): Promise<T> {
  const key = resolve(dir);
  const run = (TURNS.get(key) ?? Promise.resolve()).then(work, work);
  const settled = run.then(() => undefined, () => undefined);
  TURNS.set(key, settled);
  void settled.then(() => TURNS.get(key) === settled && TURNS.delete(key));
  return run;
}

/**
 * writeCertificates writes every Secret-derived file nginx.conf names under `dir` (certificates,
 * htpasswd files) before the config that names them, as ConfigLayout says. A certificate
 * without PEM is the fallback: made self-signed once and kept across syncs.
 *
 * With a `written` memo (a long-lived caller: the sync actor), it then removes the files it no
 * longer needs (see removeStaleFiles) and returns their paths relative to `dir`; without one it
 * removes nothing (`render --out`, the nginx actor's staging), and returns [].
 */
export function writeCertificates(dir: string, certificates: readonly Certificate[], written?: Map<string, string>): Promise<string[]> {
  return inTurn(dir, async () => {
    const access = await prepareConfigDir(dir);
    for (const certificate of certificates) {
      const path = join(dir, certificate.file);
      const folder = ownFolder(certificate.file);
      // A long-lived caller remembers what it wrote, so an unchanged file costs no read per sync.
      if (certificate.pem !== null && written?.get(path) === certificate.pem) continue;
      let pem = certificate.pem;
      if (pem === null) {
        if (await isFile(path)) continue;
        const made = await issueCertificate({ commonName: FALLBACK_COMMON_NAME, dnsNames: ['ingress.local'], days: 3650 });
        pem = made.certPem + made.keyPem;
      }
      // Written even when the text on disk is the same: that also mends an older version's owner and mode.
      await writePrivateFile(path, pem, access.files[folder]);
      if (certificate.pem !== null) written?.set(path, certificate.pem);
    }
    if (!written) return [];
    const names = new Set(certificates.map((c) => c.file));
    const key = resolve(dir);
    const ledger = LEDGERS.get(key)?.written === written ? LEDGERS.get(key)! : { written, latest: new Set<string>() };
    const removed = await removeStaleFiles(dir, new Set([...names, ...ledger.latest]), written);
    // Only a call that got this far hands its config on, so only it counts as the previous one.
    ledger.latest = names;
    LEDGERS.set(key, ledger);
    return removed;
  });
}

/**
 * sweepStaleFiles is removeStaleFiles once a config is live (stageConfig calls it after renaming
 * it over nginx.conf): a deleted Secret's files go with the reload that drops them, not on some
 * later, unrelated sync. It keeps what the latest writeCertificates call named (its config may
 * be on its way to nginx), and what nginx.conf and nginx.conf.next name; the previous call's
 * config is no longer kept, as the nginx actor only ever applies the latest one it was handed.
 * Nothing happens in a folder no long-lived caller wrote to.
 */
export function sweepStaleFiles(dir: string): Promise<string[]> {
  return inTurn(dir, async () => {
    const ledger = LEDGERS.get(resolve(dir));
    return ledger ? removeStaleFiles(dir, ledger.latest, ledger.written) : [];
  });
}

/**
 * removeStaleFiles deletes the controller's own files (in the memo, or named as it names them in
 * certificates/ and auth/) that no config nginx may still load names. Which configs those are:
 * the sync writes the files, then hands the text to the nginx actor, which writes it to
 * nginx.conf.next, runs `nginx -t`, renames it over nginx.conf and reloads; a refused config
 * leaves the old nginx.conf in place, and is retried until a newer one arrives; a master that
 * dies is restarted on nginx.conf. So a file stays while it is named by
 *   - `keep`: the current model (the config about to be handed over), and from the sync the
 *     previous call's model (handed over, maybe not yet tested, or refused and being retried),
 *   - nginx.conf on disk (what nginx serves, and what a restarted master loads: certificates are
 *     read at load time, htpasswd files on each request), or nginx.conf.next (being tested now).
 * A file of a config that never became live goes once a newer call has been made since; a file of
 * the live config never goes while it is live. (Residual window: a reload older than the previous
 * call that has not yet written nginx.conf.next; at worst its `nginx -t` or reload fails and the
 * next config follows. Failures to delete are ignored: the next sync tries again.) Only regular
 * files are removed, in folders prepareConfigDir checked: never anything through a link.
 */
async function removeStaleFiles(dir: string, keep: ReadonlySet<string>, written: Map<string, string>): Promise<string[]> {
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
    // Forget it first: a later model naming the same file with the same text must write it again.
    written.delete(join(dir, file));
    if (await removeOwnFile(join(dir, file))) removed.push(file);
  }
  return removed.sort();
}

/** writeConfigSet writes the certificates, then nginx.conf, into `dir`, ready for `nginx -p dir/ -c dir/nginx.conf`. */
export async function writeConfigSet(dir: string, text: string, certificates: readonly Certificate[]): Promise<string> {
  await writeCertificates(dir, certificates);
  const conf = join(dir, 'nginx.conf');
  await writeFileAtomic(conf, text);
  return conf;
}
