/**
 * "Did you mean …?" for misspelt annotation keys: the banded edit distance agrees with the full
 * Levenshtein table wherever it answers, and names beyond an annotation name's length are not compared.
 */
import { describe, expect, it } from 'vitest';
import { closestName, editDistanceWithin, MAX_ANNOTATION_NAME } from '../../src/model/annotations/suggest.js';

/** levenshtein is the textbook O(|a|·|b|) table, the reference the banded one must agree with. */
function levenshtein(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++)
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length]!;
}

describe('editDistanceWithin', () => {
  it.each([
    ['rewrite-target', 'rewrite-target', 0],
    ['rewrite-targt', 'rewrite-target', 1],
    ['ssl-redirekt', 'ssl-redirect', 1],
    ['proxy-body-sise', 'proxy-body-size', 1],
    ['enable-corz', 'enable-cors', 1],
    ['rewrite-tagret', 'rewrite-target', 2],
    ['cors-enable', 'enable-cors', null],
    ['', 'ab', 2],
    ['', 'abc', null],
    ['abc', '', null],
  ])('%j vs %j: %j', (a, b, expected) => {
    expect(editDistanceWithin(a, b, 2)).toBe(expected);
  });

  it('agrees with the full table on random short strings, for every bound up to 3', () => {
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const word = () => Array.from({ length: Math.floor(random() * 8) }, () => 'abc'[Math.floor(random() * 3)]).join('');
    for (let n = 0; n < 3000; n++) {
      const [a, b] = [word(), word()];
      const full = levenshtein(a, b);
      for (const max of [0, 1, 2, 3])
        expect(editDistanceWithin(a, b, max), `${a} ${b} ${max}`).toBe(full <= max ? full : null);
    }
  });
});

describe('closestName', () => {
  const known = ['rewrite-target', 'ssl-redirect', 'force-ssl-redirect', 'enable-cors', 'cors-allow-origin'];
  it.each([
    ['rewrite-targt', 'rewrite-target'],
    ['ssl-redirekt', 'ssl-redirect'],
    ['force-ssl-redirec', 'force-ssl-redirect'],
    ['no-such-thing', null],
    ['rewrite-target', null], // itself is not a suggestion
  ])('%j → %j', (name, expected) => {
    expect(closestName(name, known)).toBe(expected);
  });

  it('compares nothing longer than an annotation name can be', () => {
    const long = 'r'.repeat(MAX_ANNOTATION_NAME + 1);
    expect(closestName(long, [long.slice(1)])).toBeNull();
    expect(closestName(long.slice(1), [long.slice(2)])).toBe(long.slice(2));
  });
});
