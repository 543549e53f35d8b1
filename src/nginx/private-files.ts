/**
 * Files and folders only this process (and, for what they must read, nginx's workers) can reach.
 * The controller often runs as root and writes keys into its config folder: a folder another
 * user owns or can write to, or a symbolic link planted in it, would let that user choose where
 * root writes, chowns or deletes. So every folder is checked on an fd opened without following
 * links, every file is created O_EXCL|O_NOFOLLOW beside its target and renamed into place, and
 * only regular files are ever removed.
 */
import { constants } from 'node:fs';
import { lstat, mkdir, open, readFile, rename, unlink, type FileHandle } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';

/** UnsafePathError is a folder or file the controller refuses to use, with what is wrong with it. */
export class UnsafePathError extends Error {
  override name = 'UnsafePathError';
}

/** Access is how a folder or file is kept: its mode, and the group it is given (nginx's workers') if any. */
export interface Access {
  readonly mode: number;
  readonly gid?: number;
}

/** WorkerIdentity is the user and group nginx's workers run as. */
export interface WorkerIdentity {
  readonly uid: number;
  readonly gid: number;
}

const euid = (): number => process.geteuid?.() ?? -1;
const octal = (mode: number) => `0${(mode & 0o7777).toString(8)}`;

/**
 * workerIdentity is who nginx's workers run as when they are not this process's user: a root
 * master without a `user` directive (the templates have none) switches its workers to the user
 * compiled in, `nobody` with its primary group (Debian's nginx: nobody:nogroup, 65534:65534;
 * test/nginx/private-folder.test.ts checks it against a real root nginx). Null when not root:
 * then the workers run as this process's user and need nothing more than the owner's bits.
 */
export async function workerIdentity(): Promise<WorkerIdentity | null> {
  if (euid() !== 0) return null;
  const passwd = await readFile('/etc/passwd', 'utf8').catch(() => '');
  const [, , uid, gid] =
    passwd
      .split('\n')
      .find((line) => line.startsWith('nobody:'))
      ?.split(':') ?? [];
  return uid && gid ? { uid: Number(uid), gid: Number(gid) } : { uid: 65534, gid: 65534 };
}

async function openFolder(path: string): Promise<FileHandle> {
  try {
    return await open(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ELOOP' && code !== 'ENOTDIR') throw error;
    // Linux answers ENOTDIR for a link to a folder (O_DIRECTORY is checked first): say which.
    const link =
      code === 'ELOOP' ||
      (await lstat(path).then(
        (stat) => stat.isSymbolicLink(),
        () => false,
      ));
    throw new UnsafePathError(link ? `${path} is a symbolic link; use a real folder` : `${path} is not a folder`);
  }
}

/**
 * ensurePrivateDir makes `path` a folder of this process's user with `access` (creating it if
 * missing; its parent must exist), or refuses it with an UnsafePathError: a symbolic link, not a
 * folder, owned by another user, or writable by its group or everyone (someone else may already
 * have put links in it). Mode and group are then set on the open folder, never through a path,
 * and the owner never changes: the group is the only thing given away.
 */
export async function ensurePrivateDir(path: string, access: Access): Promise<void> {
  await mkdir(path, { mode: access.mode }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error;
  });
  const folder = await openFolder(path);
  try {
    const stat = await folder.stat();
    if (stat.uid !== euid())
      throw new UnsafePathError(
        `${path} is owned by uid ${stat.uid}, not by this process (uid ${euid()}); remove it or choose another folder`,
      );
    if (stat.mode & 0o022)
      throw new UnsafePathError(
        `${path} is writable by ${stat.mode & 0o002 ? 'everyone' : 'its group'} (mode ${octal(stat.mode)}); remove ` +
          'it or choose another folder',
      );
    if (access.gid !== undefined && stat.gid !== access.gid) await folder.chown(stat.uid, access.gid);
    // After the chown: changing the group clears set-id bits, and chmod sets exactly these.
    if ((stat.mode & 0o7777) !== access.mode || (access.gid !== undefined && stat.gid !== access.gid))
      await folder.chmod(access.mode);
  } finally {
    await folder.close();
  }
}

/**
 * writePrivateFile writes `content` to a new file beside `path` (O_CREAT|O_EXCL|O_NOFOLLOW: never
 * into something already there), gives it `access` on its fd, and renames it over `path`, so
 * readers see old or new, never half, and a link at `path` is replaced, not followed. A failed
 * write (ENOSPC on a full disk) removes its temporary file, which would otherwise keep the space
 * it got and pile up, one more per failed attempt. The folder must be one ensurePrivateDir checked.
 */
export async function writePrivateFile(path: string, content: string, access: Access): Promise<void> {
  const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  let created = false;
  try {
    const file = await open(
      temporary,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      access.mode,
    );
    created = true;
    try {
      await file.writeFile(content);
      if (access.gid !== undefined) await file.chown(euid(), access.gid);
      await file.chmod(access.mode); // the umask may have narrowed it, a chown cleared set-id bits
    } finally {
      await file.close();
    }
    await rename(temporary, path);
  } catch (error) {
    if (created) await unlink(temporary).catch(() => undefined);
    throw error;
  }
}

/**
 * removeOwnFile deletes `path` if it is a regular file; a link, a folder or anything else is left
 * alone (false). The folder must be one ensurePrivateDir checked, so no component above is a link.
 */
export async function removeOwnFile(path: string): Promise<boolean> {
  const stat = await lstat(path).catch(() => null);
  if (!stat?.isFile()) return false;
  return unlink(path).then(
    () => true,
    () => false,
  );
}

/**
 * removeLinkAt removes a symbolic link (or other non-file) where nginx itself will create a
 * regular file (its pid file): nginx opens it by path and would write through the link.
 */
export async function removeLinkAt(path: string): Promise<void> {
  const stat = await lstat(path).catch(() => null);
  if (stat?.isSymbolicLink()) await unlink(path);
  else if (stat && !stat.isFile()) throw new UnsafePathError(`${path} is not a regular file`);
}
