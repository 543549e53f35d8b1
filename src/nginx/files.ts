import { lstat, mkdir, readdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { Certificate } from '../model/nginx-model.js';
import { issueCertificate } from '../tls/issue.js';
import {
  ensurePrivateDir,
  removeLinkAt,
  UnsafePathError,
  workerIdentity,
  writePrivateFile,
  type Access,
} from './private-files.js';

/**
 * writeFileAtomic writes a file of this process only (0600 unless told), beside its target and
 * renamed into place, so readers see old or new, never half (see writePrivateFile).
 */
export async function writeFileAtomic(path: string, content: string, mode = 0o600): Promise<void> {
  await writePrivateFile(path, content, { mode });
}

const isFile = (path: string) =>
  lstat(path).then(
    (stat) => stat.isFile(),
    () => false,
  );

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
  for (const [folder, folderAccess] of Object.entries(access.folders))
    await ensurePrivateDir(join(dir, folder), folderAccess);
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

/** OWN_FILES are the folders the controller writes Secret-derived files into, and the names it gives them there. */
export const OWN_FILES: Readonly<Record<'certificates' | 'auth', RegExp>> = {
  certificates: /^[^/]+\.pem$/,
  auth: /^[^/]+\.htpasswd$/,
};

function ownFolder(file: string): 'certificates' | 'auth' {
  const [folder, name, ...rest] = file.split('/');
  if ((folder === 'certificates' || folder === 'auth') && name && name !== '..' && name !== '.' && rest.length === 0)
    return folder;
  throw new UnsafePathError(`${JSON.stringify(file)} is not a file of certificates/ or auth/`);
}

/**
 * writeCertificates writes every Secret-derived file nginx.conf names under `dir` (certificates,
 * htpasswd files) before the config that names them, as ConfigLayout says. A certificate
 * without PEM is the fallback: made self-signed once and kept across syncs. With a `written`
 * memo (file → text, relative to `dir`) a file whose text it already wrote is not written again.
 * It removes nothing: at runtime only the nginx actor's ConfigFolder (apply.ts) writes and
 * removes files in the config folder, and it knows which configs name which files.
 */
export async function writeCertificates(
  dir: string,
  certificates: readonly { file: string; pem: string | null }[],
  written?: Map<string, string>,
): Promise<void> {
  const access = await prepareConfigDir(dir);
  for (const certificate of certificates) {
    const path = join(dir, certificate.file);
    const folder = ownFolder(certificate.file);
    // A long-lived caller remembers what it wrote, so an unchanged file costs no read per reload.
    if (certificate.pem !== null && written?.get(certificate.file) === certificate.pem) continue;
    let pem = certificate.pem;
    if (pem === null) {
      if (await isFile(path)) continue;
      const made = await issueCertificate({
        commonName: FALLBACK_COMMON_NAME,
        dnsNames: ['ingress.local'],
        days: 3650,
      });
      pem = made.certPem + made.keyPem;
    }
    // Written even when the text on disk is the same: that also mends an older version's owner and mode.
    await writePrivateFile(path, pem, access.files[folder]);
    if (certificate.pem !== null) written?.set(certificate.file, certificate.pem);
  }
}

/**
 * ownFilesIn lists the Secret-derived files under `dir` (named as the controller names them in
 * certificates/ and auth/), relative to `dir`: what a ConfigFolder may remove.
 */
export async function ownFilesIn(dir: string): Promise<string[]> {
  const files: string[] = [];
  for (const [folder, pattern] of Object.entries(OWN_FILES)) {
    const entries = await readdir(join(dir, folder)).catch(() => [] as string[]);
    for (const name of entries) if (pattern.test(name)) files.push(`${folder}/${name}`);
  }
  return files;
}

/** writeConfigSet writes the certificates, then nginx.conf, into `dir`, ready for `nginx -p dir/ -c dir/nginx.conf`. */
export async function writeConfigSet(dir: string, text: string, certificates: readonly Certificate[]): Promise<string> {
  await writeCertificates(dir, certificates);
  const conf = join(dir, 'nginx.conf');
  await writeFileAtomic(conf, text);
  return conf;
}
