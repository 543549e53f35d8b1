/**
 * The diff of nginx.conf at each reload, in the debug log (src/nginx/text-diff.ts): hunks as `diff -u` prints them,
 * checked against GNU diff's own output where the edit is unambiguous, and on random edits by applying the hunks.
 */
import { execa } from 'execa';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unifiedDiff } from '../../src/nginx/text-diff.js';

const lines = (...l: string[]) => `${l.join('\n')}\n`;
const numbered = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}`);

/** applyHunks rebuilds the new text from the old one and a diff's hunks, checking every context and removed line. */
function applyHunks(before: string, diff: string): string {
  if (diff === '') return before;
  const old = before === '' ? [] : before.replace(/\n$/, '').split('\n');
  const out: string[] = [];
  let at = 0;
  for (const line of diff.split('\n')) {
    const header = /^@@ -(\d+),(\d+) \+\d+,\d+ @@$/.exec(line);
    if (header) {
      const start = Number(header[2]) === 0 ? Number(header[1]) : Number(header[1]) - 1;
      while (at < start) out.push(old[at++]!);
    } else if (line.startsWith('+')) out.push(line.slice(1));
    else {
      expect(old[at]).toBe(line.slice(1));
      if (line.startsWith(' ')) out.push(old[at]!);
      at++;
    }
  }
  while (at < old.length) out.push(old[at++]!);
  return out.length === 0 ? '' : `${out.join('\n')}\n`;
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ia-diff-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** gnuDiff is `diff -u`'s hunks (its two header lines dropped). */
async function gnuDiff(before: string, after: string): Promise<string> {
  await writeFile(join(dir, 'a'), before);
  await writeFile(join(dir, 'b'), after);
  const run = await execa('diff', ['-u', join(dir, 'a'), join(dir, 'b')], { reject: false });
  return run.stdout.split('\n').slice(2).join('\n');
}

describe('unifiedDiff', () => {
  it('is empty for equal texts', () => {
    expect(unifiedDiff(lines('a', 'b'), lines('a', 'b'))).toBe('');
  });

  it.each([
    [
      'one line changed in the middle',
      lines(...numbered(20)),
      lines(...numbered(9), 'changed', ...numbered(20).slice(10)),
    ],
    ['a line added at the start', lines(...numbered(8)), lines('first', ...numbered(8))],
    ['a line removed at the end', lines(...numbered(8)), lines(...numbered(7))],
    ['two changes far apart: two hunks', lines(...numbered(30)), lines('x', ...numbered(30).slice(1, 29), 'y')],
    [
      'two changes close together: one hunk',
      lines(...numbered(12)),
      lines(...numbered(4), 'x', ...numbered(12).slice(5, 7), 'y', ...numbered(12).slice(8)),
    ],
    ['from nothing', '', lines('a', 'b')],
    ['to nothing', lines('a', 'b'), ''],
  ])('prints %s as diff -u does', async (_, before, after) => {
    expect(unifiedDiff(before, after)).toBe(await gnuDiff(before, after));
  });

  it('gives hunks that turn the old text into the new one, for random edits', () => {
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let round = 0; round < 200; round++) {
      const before = Array.from({ length: random(40) }, () => `l${random(6)}`);
      const after = [...before];
      for (let edits = random(6); edits > 0; edits--) {
        const at = random(after.length + 1);
        if (random(2) === 0) after.splice(at, 1);
        else after.splice(at, 0, `n${random(6)}`);
      }
      const a = before.length ? lines(...before) : '';
      const b = after.length ? lines(...after) : '';
      expect(applyHunks(a, unifiedDiff(a, b))).toBe(b);
      // Past maxEdits the middle is replaced whole: still a diff that applies.
      expect(applyHunks(a, unifiedDiff(a, b, { maxEdits: 2 }))).toBe(b);
    }
  });

  it('caps its output, saying how many lines it left off', () => {
    const diff = unifiedDiff(lines(...numbered(2000)), lines(...numbered(2000).map((l) => `${l}!`)), { maxLines: 50 });
    const out = diff.split('\n');
    expect(out).toHaveLength(51);
    expect(out[50]).toBe(`… ${4001 - 50} more lines`);
  });

  it('stays linear when the texts differ everywhere: the middle counts as replaced past maxEdits', () => {
    const before = lines(...numbered(50_000));
    const after = lines(...numbered(50_000).map((l) => `${l}.`));
    const diff = unifiedDiff(before, after, { maxEdits: 100, maxLines: 10 });
    expect(diff.split('\n')[0]).toBe('@@ -1,50000 +1,50000 @@');
  });
});
