/**
 * liveChildren (src/nginx/proc.ts) against the walk of every process it replaces where the kernel lists children: a
 * shell with three children, one of which exits unreaped (a zombie, not live), and a pid that has none or is gone.
 */
import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { isLive, liveChildren, processes } from '../../src/nginx/proc.js';
import { waitFor } from '../support/cluster.js';

const byWalk = (parent: number) =>
  processes()
    .filter((p) => p.ppid === parent && isLive(p))
    .map((p) => p.pid)
    .sort((a, b) => a - b);
const sorted = (pids: number[]) => [...pids].sort((a, b) => a - b);

const started: number[] = [];
afterEach(() => {
  for (const pid of started.splice(0)) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
});

describe('liveChildren', () => {
  it('lists the live children a walk of /proc finds, without the zombie', async () => {
    // two sleepers and one `true` the shell does not reap while it waits on `read` (a zombie until then)
    const shell = spawn('sh', ['-c', 'sleep 30 & sleep 30 & true & read x'], { detached: true, stdio: 'pipe' });
    started.push(shell.pid!);
    // `true` is live for a moment before it exits: wait for the zombie itself, not for two live children only
    const zombies = () => processes().filter((p) => p.ppid === shell.pid && p.state === 'Z').length;
    await waitFor(
      'two live children and the zombie',
      async () => byWalk(shell.pid!).length === 2 && zombies() === 1,
      10_000,
    );
    expect(sorted(liveChildren(shell.pid!))).toEqual(byWalk(shell.pid!));
    expect(liveChildren(shell.pid!)).toHaveLength(2);
  });

  it('is empty for a process without children, and for one that is gone', async () => {
    const lone = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    started.push(lone.pid!);
    expect(liveChildren(lone.pid!)).toEqual([]);
    process.kill(lone.pid!, 'SIGKILL');
    await new Promise((resolve) => lone.once('exit', resolve));
    expect(liveChildren(lone.pid!)).toEqual([]);
  });
});
