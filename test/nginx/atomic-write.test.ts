/**
 * writeFileAtomic leaves nothing behind when it fails: on a full disk a half-written temporary
 * file would keep the space it got, one more per failed reload (the reliability suite's disk-full
 * fault found this). Here the rename fails instead: the target is a folder.
 */
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { writeFileAtomic } from '../../src/nginx/files.js';

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

it('writes the file whole and leaves no temporary file', async () => {
  dir = await mkdtemp(join(tmpdir(), 'ia-atomic-'));
  await writeFileAtomic(join(dir, 'nginx.conf'), 'events {}\n');
  expect(await readFile(join(dir, 'nginx.conf'), 'utf8')).toBe('events {}\n');
  expect(await readdir(dir)).toEqual(['nginx.conf']);
});

it('removes its temporary file when the write fails', async () => {
  dir = await mkdtemp(join(tmpdir(), 'ia-atomic-'));
  await mkdir(join(dir, 'nginx.conf', 'in-the-way'), { recursive: true });
  await expect(writeFileAtomic(join(dir, 'nginx.conf'), 'events {}\n')).rejects.toThrow();
  expect(await readdir(dir)).toEqual(['nginx.conf']);
});
