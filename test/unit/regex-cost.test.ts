/**
 * Issue 27, "a tenant's regex cannot stall others": the regex subset (src/model/regex-path.ts) refuses every pattern
 * nginx's backtracking PCRE2 could run in more than linear time (regex-cost.ts says why), and keeps what
 * ingress-nginx users write. Table-driven, then a property against recheck, an independent ReDoS checker: no
 * pattern the subset accepts is one recheck finds vulnerable.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkRegexPath, type RegexAnchoring, regexSubsetRefusal, regexWeight } from '../../src/model/regex-path.js';
import { checkSync } from '../support/recheck.js';

describe('issue 27: regexes that backtrack more than linearly are refused', () => {
  it.each([
    // [pattern, anchoring, what the message names]
    ['(a|aa)+', 'both', 'two ways to match the same text'], // the 128 header matches
    ['/(a|aa)+', 'start', 'two ways to match the same text'], // the Ingress paths
    ['/(a+)+b', 'start', 'two ways to match the same text'],
    ['/(a+)*b', 'start', 'two ways'],
    ['/(a*)*b', 'start', 'can match nothing'],
    ['/(a|a?)+b', 'start', 'can match nothing'],
    ['/(x?|y?)z', 'both', 'two branches that can both match nothing'],
    ['/.*.*x', 'start', 'two ways to match the same text'],
    ['/(.*)/(.*)', 'both', 'two ways to match the same text up to offset 7'],
    ['/(.*)/(.*)$', 'start', 'two ways'], // with the $, the final .* no longer ends the match
    ['/(\\w+\\s?)+$', 'start', 'two ways'],
    ['/(([a-z])+.)+[A-Z]([a-z])+$', 'start', 'two ways'],
    ['/(.*a){12}', 'both', 'two ways'],
    ['/[a-z]{0,100}[a-z]{0,100}', 'both', 'two ways'],
    ['/(?:.|.)x', 'both', 'two ways'],
    ['/(((.){8}){8}){8}', 'both', 'more than 512 character items'],
  ] as const)('%s (%s) is refused: %s', (pattern, anchoring, message) => {
    const refused = regexSubsetRefusal(pattern, anchoring);
    expect(refused).toContain(message);
    expect(refused).toContain('more than linear time');
  });

  it.each([
    ['/api/v[0-9]+/.*', 'start'],
    ['/foo(/|$)(.*)', 'start'], // rewrite-target's captures
    ['/foo(/|$)(.*)', 'both'],
    ['/(en|de)/', 'start'],
    ['^/(en|de)/', 'both'],
    ['/.*\\.(jpg|png)$', 'start'],
    ['/.*\\.(jpg|png)$', 'both'],
    ['/(.*)/(.*)', 'start'], // nginx's ^… ends the match where the final .* starts
    ['/api/(.*)/v1/(.*)', 'start'],
    ['/([^/]*)/(.*)', 'both'],
    ['/(api|app)/.*', 'both'],
    ['/users/[0-9]+/posts/[0-9]+', 'both'],
    ['/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}', 'both'],
    ['/foo/.*/bar', 'both'],
    ['/(\\w+)/(\\d+)', 'both'],
    ['/[a-z]+(-[a-z]+)*', 'both'],
    ['/(/[a-z0-9-]+)*', 'both'],
    ['/v[0-9]+/\\d{2,3}', 'start'],
    ['/a{1000}', 'start'],
    ['/[^/]+\\.(css|js)$', 'start'],
    ['/(?:x|y)*?z', 'start'],
    ['/\\.well-known/acme-challenge/.*', 'start'],
    ['/static/(.*)', 'both'],
    ['/(/|$)', 'start'],
    ['/$', 'both'],
  ] as const)('%s (%s) is accepted', (pattern, anchoring) => {
    expect(regexSubsetRefusal(pattern, anchoring)).toBeNull();
  });

  it('checkRegexPath names the refused path, and reads Ingress paths as nginx runs them (^…)', () => {
    const checked = checkRegexPath('/(a|aa)+');
    expect(checked.ok).toBe(false);
    if (!checked.ok) expect(checked.message).toMatch(/^"\/\(a\|aa\)\+": two ways/);
    expect(checkRegexPath('/(.*)/(.*)').ok).toBe(true);
    expect(checkRegexPath('/(.*)/(.*)', 'both').ok).toBe(false);
  });

  it.each([
    ['/api', 'both', 1], // no repeat: tried once per request, whatever the input
    ['/foo(/|$)(.*)', 'start', 1], // the final .* ends the match
    ['/foo(/|$)(.*)', 'both', 2],
    ['/api/v[0-9]+/.*', 'start', 3],
    ['/.*\\.(jpg|png)$', 'both', 9],
  ] as const)('regexWeight(%s, %s) is %i', (pattern, anchoring, weight) => {
    expect(regexWeight(pattern, anchoring as RegexAnchoring)).toBe(weight);
  });
});

/** Small patterns over characters that overlap (a, b, ., \w, [ab]) in the constructs that backtrack. */
const pattern: fc.Arbitrary<string> = fc.letrec<{ re: string; atom: string }>((tie) => ({
  atom: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom('a', 'b', '.', '\\w', '[ab]', '/'),
    tie('re').map((r) => `(${r})`),
  ),
  re: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    tie('atom'),
    fc.tuple(tie('atom'), fc.constantFrom('*', '+', '?', '{2}', '{1,3}', '{2,}', '*?')).map(([a, q]) => `${a}${q}`),
    fc.array(tie('re'), { minLength: 2, maxLength: 3 }).map((rs) => rs.join('')),
    fc.array(tie('re'), { minLength: 2, maxLength: 3 }).map((rs) => rs.join('|')),
  ),
})).re;

describe('issue 27: what the subset accepts, recheck does not find vulnerable', () => {
  it('holds for generated patterns, end-anchored (the Gateway router) and not (an Ingress location)', () => {
    let accepted = 0;
    fc.assert(
      fc.property(pattern, fc.constantFrom<RegexAnchoring>('both', 'start'), (p, anchoring) => {
        const path = `/${p}`;
        if (regexSubsetRefusal(path, anchoring) !== null) return;
        accepted++;
        const source = anchoring === 'both' ? `^(?:${path})$` : `^${path}`;
        const verdict = checkSync(source, anchoring === 'both' ? '' : 'i', { checker: 'automaton', timeout: 5_000 });
        expect(verdict.status, `${source}: ${verdict.complexity?.type}`).not.toBe('vulnerable');
      }),
      { numRuns: 200, seed: 27 },
    );
    expect(accepted).toBeGreaterThan(40); // the property says something
  }, 120_000);

  it('recheck agrees that what the subset refuses here is vulnerable (the oracle can tell)', () => {
    for (const source of ['^(?:(a|aa)+)$', '^/(a+)+b', '^(?:/(.*)/(.*))$', '^/.*.*x'])
      expect(checkSync(source, '', { checker: 'automaton', timeout: 5_000 }).status, source).toBe('vulnerable');
  });
});
