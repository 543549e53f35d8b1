/**
 * A small tmpfs for the disk-full fault: mounted on a fresh folder when this process may mount
 * (root with CAP_SYS_ADMIN, as in CI here), filled to the last page on demand, emptied again.
 */
import { mkdtemp, readdir, rm, rmdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';

/** Tmpfs is a mounted tmpfs and its controls. */
export interface Tmpfs {
  readonly dir: string;
  readonly sizeMb: number;
  /** fill writes ballast files until the file system has no byte left; returns the bytes written */
  fill(): Promise<number>;
  /** free removes the ballast */
  free(): Promise<void>;
  unmount(): Promise<void>;
}

const BALLAST = 'ballast-';

/** mountTmpfs mounts a tmpfs of `sizeMb`, or says why it cannot. */
export async function mountTmpfs(sizeMb: number): Promise<Tmpfs | { reason: string }> {
  if (process.platform !== 'linux') return { reason: `a tmpfs needs Linux, this is ${process.platform}` };
  if (process.getuid?.() !== 0) return { reason: 'mounting a tmpfs needs root' };
  const dir = await mkdtemp(join(tmpdir(), 'ia-reliability-tmpfs-'));
  const mounted = await execa('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m,mode=0755`, 'tmpfs', dir], {
    reject: false,
    all: true,
    timeout: 10_000,
  });
  if (mounted.exitCode !== 0) {
    await rmdir(dir).catch(() => undefined);
    return {
      reason:
        `mount -t tmpfs failed (${String(mounted.all).trim() || `exit ${mounted.exitCode}`}); the container ` +
        'lacks CAP_SYS_ADMIN',
    };
  }
  let count = 0;
  const write = async (bytes: number): Promise<boolean> => {
    try {
      await writeFile(join(dir, `${BALLAST}${count++}`), Buffer.alloc(bytes, 0x61));
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOSPC') return false;
      throw error;
    }
  };
  return {
    dir,
    sizeMb,
    fill: async () => {
      let written = 0;
      // Big chunks first, then ever smaller ones: a partial write keeps what it got, so the last
      // pages go too.
      for (const chunk of [1 << 20, 64 << 10, 4 << 10, 512, 1]) {
        while (await write(chunk)) written += chunk;
      }
      return written;
    },
    free: async () => {
      for (const name of await readdir(dir)) if (name.startsWith(BALLAST)) await rm(join(dir, name), { force: true });
    },
    unmount: async () => {
      await execa('umount', ['-l', dir], { reject: false, timeout: 10_000 });
      await rmdir(dir).catch(() => undefined);
    },
  };
}
