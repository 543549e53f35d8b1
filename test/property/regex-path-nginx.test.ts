/**
 * Finding 2 of issue 14, as a property: every regex-ish path checkRegexPath accepts is one nginx
 * (PCRE2) compiles, both as the location (`~* "^<path>"`) and as rewrite-target's pattern
 * (`"(?i)^<path>"`). The strings come from a grammar of the constructs where PCRE2 and
 * JavaScript part ways; each batch goes through one real `nginx -t`, and a failing batch is
 * bisected to the path nginx refused.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkRegexPath } from '../../src/model/regex-path.js';
import { nginxBinary, testConfig } from '../../src/nginx/binary.js';
import { quote } from '../../src/render/quote.js';

let scratch: string;
let run = 0;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'ia-regex-prop-'));
});
afterAll(() => rm(scratch, { recursive: true, force: true }));

/** The risky constructs: class escapes in ranges, empty classes, big and nested counts, (? forms, stray braces. */
const token = fc.constantFrom(
  'a',
  'Z',
  '0',
  '-',
  '_',
  '/',
  '.',
  ':',
  '~',
  ',',
  '=',
  '&',
  '\\d',
  '\\w',
  '\\s',
  '\\D',
  '\\W',
  '\\S',
  '\\b',
  '\\B',
  '\\.',
  '\\-',
  '\\]',
  '\\[',
  '\\{',
  '\\/',
  '\\\\',
  '\\1',
  '\\u0041',
  '\\',
  '[',
  ']',
  '[^',
  '[]',
  '[^]',
  '[a-z]',
  '[\\w-.]',
  '[\\d-z]',
  '[a-]',
  '[-a]',
  '[z-a]',
  '[[:alpha:]]',
  '[\\w.-]',
  '[a\\-z]',
  '[.$|?*+(){}]',
  '(',
  ')',
  '(?:',
  '(?=',
  '(?!',
  '(?<n>',
  '(?i)',
  '(?#',
  '|',
  '^',
  '$',
  '*',
  '+',
  '?',
  '*?',
  '+?',
  '??',
  '*+',
  '++',
  '{2}',
  '{0,3}',
  '{2,}',
  '{,5}',
  '{3,1}',
  '{1000}',
  '{1001}',
  '{99999}',
  '{65535}',
  '{',
  '}',
  '{1',
  '{a}',
);
/** Mostly well-formed: a group or class around tokens half the time, so many strings pass the check. */
const piece = fc.oneof(
  { weight: 3, arbitrary: token },
  {
    weight: 2,
    arbitrary: fc
      .tuple(
        fc.constantFrom('(', '(?:'),
        fc.array(token, { maxLength: 4 }),
        fc.constantFrom(')', ')*', ')+', '){2}', '){10,20}', '){100}', ')?'),
      )
      .map(([o, b, c]) => `${o}${b.join('')}${c}`),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.array(fc.constantFrom('a', 'z', '0', '9', '-', '_', '.', '\\d', '\\w', '\\]', 'a-z', '0-9', '\\.-\\/'), {
          maxLength: 4,
        }),
        fc.constantFrom('', '+', '*', '{3}', '{1,1000}'),
      )
      .map(([m, q]) => `[${m.join('')}]${q}`),
  },
);
const regexish = fc.array(piece, { minLength: 1, maxLength: 8 }).map((p) => `/${p.join('')}`);

/** nginxTakes runs one nginx -t over a server holding each path as a location and a rewrite. */
async function nginxTakes(paths: readonly string[]): Promise<{ ok: boolean; output: string }> {
  const dir = join(scratch, `b${run++}`);
  await mkdir(join(dir, 'logs'), { recursive: true });
  const locations = paths
    .map((p) => `    location ~* ${quote(`^${p}`)} { rewrite ${quote(`(?i)^${p}`)} /x break; }`)
    .join('\n');
  const conf =
    `pid nginx.pid;\nerror_log stderr;\nevents {}\nhttp {\n  access_log off;\n  server {\n    listen ` +
    `127.0.0.1:9;\n${locations}\n  }\n}\n`;
  await writeFile(join(dir, 'nginx.conf'), conf);
  return testConfig(nginxBinary(), dir, join(dir, 'nginx.conf'));
}

/** bisect finds one path of a batch nginx refuses on its own. */
async function bisect(paths: readonly string[]): Promise<string> {
  let suspects = paths;
  while (suspects.length > 1) {
    const half = suspects.slice(0, Math.ceil(suspects.length / 2));
    suspects = (await nginxTakes(half)).ok ? suspects.slice(half.length) : half;
  }
  return suspects[0]!;
}

describe('finding 2: regex paths checkRegexPath accepts are ones nginx compiles', () => {
  it('finding 2: for every accepted regex-ish path, nginx -t passes (300 paths, batched)', async () => {
    let generated = 0;
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(regexish, { minLength: 30, maxLength: 30 }), async (batch) => {
        generated += batch.length;
        const ok = [...new Set(batch.filter((p) => checkRegexPath(p).ok))];
        accepted += ok.length;
        if (ok.length === 0) return;
        const verdict = await nginxTakes(ok);
        if (!verdict.ok) {
          const culprit = await bisect(ok);
          expect.fail(`nginx refuses accepted path ${JSON.stringify(culprit)}: ${verdict.output}`);
        }
      }),
      { numRuns: 10 },
    );
    // The grammar must exercise the accepting side too, or the property says nothing.
    expect(generated).toBeGreaterThanOrEqual(300);
    expect(accepted).toBeGreaterThan(generated / 10);
  }, 120_000);
});
