/**
 * Finding 2 of issue 14: regex paths JavaScript's RegExp accepts but PCRE2 (nginx's regex library
 * here) refuses are refused by checkRegexPath, by name; and nginx really refuses each of them.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkRegexPath } from '../../src/model/regex-path.js';
import { nginxBinary, testConfig } from '../../src/nginx/binary.js';
import { quote } from '../../src/render/quote.js';

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'ia-regex-'));
});
afterAll(() => rm(scratch, { recursive: true, force: true }));

async function nginxTakesLocation(path: string): Promise<boolean> {
  const dir = join(scratch, String(Math.random()).slice(2));
  await mkdir(join(dir, 'logs'), { recursive: true });
  const conf =
    `pid nginx.pid;\nerror_log stderr;\nevents {}\nhttp { access_log off; server { listen 127.0.0.1:9; ` +
    `location ~* ${quote(`^${path}`)} {} } }\n`;
  await writeFile(join(dir, 'nginx.conf'), conf);
  return (await testConfig(nginxBinary(), dir, join(dir, 'nginx.conf'))).ok;
}

describe('finding 2: regex paths PCRE2 refuses', () => {
  it.each([
    // [path, what the message names, nginx refuses it too]
    ['/api/[\\w-.]+', 'a range from a class escape', true],
    // Found by the property test below (a random seed): PCRE2's POSIX [. .] / [: :] elements.
    ['/[..]', "a class starting with '.'", true],
    ['/[:a:]', "a class starting with ':'", true],
    ['/[\\d-z]', 'a range from a class escape', true],
    ['/[]a', 'an empty class', true],
    ['/a{99999}', 'a repeat count above 1000', true],
    ['/a{65536}', 'a repeat count above 1000', true],
    ['/((a){100}){100}', 'nested repeats of 10000', true],
    // PCRE2 reads these otherwise than JavaScript: a POSIX class; {,5} is a quantifier from PCRE2 10.43 on
    ['/[[:alpha:]]', "an unescaped '['", false],
    ['/a{,5}', "a '{' that is not part of", false],
  ] as const)('finding 2: %s is refused (%s), though JavaScript compiles it', async (path, message, nginxRefuses) => {
    expect(() => new RegExp(`^${path}`)).not.toThrow(); // all the old check asked
    const checked = checkRegexPath(path);
    expect(checked.ok).toBe(false);
    if (!checked.ok) expect(checked.message).toContain(message);
    if (nginxRefuses) expect(await nginxTakesLocation(path)).toBe(false);
  });

  it.each([
    '/a(/|$)(.*)',
    '/v[0-9]+/\\d{2,3}',
    '/api/[\\w.-]+',
    '/[a\\-z]',
    '/(?:x|y)*?z',
    '/a{1000}',
    '/[^/]+\\.(css|js)$',
  ])('accepts %s, which nginx compiles', async (path) => {
    expect(checkRegexPath(path).ok).toBe(true);
    expect(await nginxTakesLocation(path)).toBe(true);
  });

  it('checks the length before reading the pattern', () => {
    const checked = checkRegexPath(`/${'('.repeat(200_000)}`);
    expect(checked.ok).toBe(false);
    if (!checked.ok) expect(checked.message).toBe('is longer than 1024 characters');
  });
});
