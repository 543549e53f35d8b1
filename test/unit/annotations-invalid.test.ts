/**
 * What an invalid annotation costs (the registry's onInvalid rule per key): parseAnnotations on
 * plain Ingress objects, and the small helpers it rests on.
 */
import { describe, expect, it } from 'vitest';
import { readList } from '../../src/model/annotations/read.js';
import { outcomeOf, parseAnnotations, supportedKeys } from '../../src/model/annotations/registry.js';
import { refusedAnnotations } from '../../src/model/annotations/refused.js';
import type { AnnotationInput } from '../../src/model/annotations/types.js';
import { defaultGlobalConfig } from '../../src/model/config-map/defaults.js';
import type { GlobalConfig, Problem } from '../../src/model/nginx-model.js';
import type { Ingress } from '../../src/model/snapshot.js';

const P = 'nginx.ingress.kubernetes.io/';

function parse(annotations: Record<string, string>, config: Partial<GlobalConfig> = {}) {
  const problems: Problem[] = [];
  const ingress = { metadata: { namespace: 'default', name: 'site', annotations } } as unknown as Ingress;
  const result = parseAnnotations(ingress, 'default', 'site', {
    config: { ...defaultGlobalConfig, ...config },
    modules: {},
    secret: () => undefined,
    problems,
  });
  return {
    result,
    problems: problems.map((p) => `${p.field.slice(`metadata.annotations.${P}`.length)}: ${p.message}`),
  };
}
const with_ = (values: Record<string, string>) =>
  Object.fromEntries(Object.entries(values).map(([k, v]) => [`${P}${k}`, v]));

describe('outcomeOf', () => {
  it('deny always denies; filter drops an entry but ignores a whole value; ignore ignores', () => {
    expect(outcomeOf('deny', false)).toBe('deny');
    expect(outcomeOf('deny', true)).toBe('deny');
    expect(outcomeOf('filter', true)).toBe('entry');
    expect(outcomeOf('filter', false)).toBe('ignore');
    expect(outcomeOf('ignore', true)).toBe('ignore');
  });
});

describe('readList', () => {
  const recorded: string[] = [];
  const input = (value: string | undefined) =>
    ({
      get: () => value,
      invalid: (key: string, message: string, entry?: string) => recorded.push(`${key} ${message} ${entry ?? 'whole'}`),
    }) as unknown as AnnotationInput;
  const digits = (v: string) =>
    /^\d+$/.test(v) ? { ok: true as const, value: Number(v) } : { ok: false as const, message: `${v} bad` };

  it('keeps the valid entries, reports each bad one, skips empty ones', () => {
    recorded.length = 0;
    expect(readList(input('1, x, 2,, y ,3,'), 'k', 100, digits)).toEqual([1, 2, 3]);
    expect(recorded).toEqual(['k x bad entry', 'k y bad entry']);
  });

  it('undefined when absent; a value over the length limit is invalid as a whole', () => {
    recorded.length = 0;
    expect(readList(input(undefined), 'k', 100, digits)).toBeUndefined();
    expect(readList(input('1,2,3'), 'k', 4, digits)).toBeUndefined();
    expect(recorded).toEqual(['k is longer than 4 characters whole']);
  });
});

describe('the registry', () => {
  it('gives every key a rule; the security keys fail closed, the CORS lists filter', () => {
    const rule = (key: string) => supportedKeys.find((k) => k.key.key === key)?.key.onInvalid;
    for (const key of [
      'auth-url',
      'auth-secret',
      'auth-type',
      'auth-tls-secret',
      'allowlist-source-range',
      'proxy-ssl-secret',
      'proxy-ssl-verify',
      'proxy-ssl-name',
    ])
      expect([key, rule(key)]).toEqual([key, 'deny']);
    for (const key of ['cors-allow-origin', 'cors-allow-methods', 'cors-allow-headers'])
      expect([key, rule(key)]).toEqual([key, 'filter']);
    for (const key of ['limit-rps', 'proxy-read-timeout', 'rewrite-target', 'server-snippet'])
      expect([key, rule(key)]).toEqual([key, 'ignore']);
    expect(new Set(supportedKeys.map((k) => k.key.onInvalid))).toEqual(new Set(['ignore', 'deny', 'filter']));
    const refused = (key: string) => refusedAnnotations.find((r) => r.key === key)?.effect;
    expect([refused('auth-tls-match-cn'), refused('server-alias')]).toEqual(['denied', 'ignored']);
    for (const key of ['enable-modsecurity', 'enable-owasp-core-rules', 'modsecurity-snippet'])
      expect([key, rule(key)]).toEqual([key, 'deny']);
  });
});

describe('parseAnnotations: a bad value costs its feature', () => {
  it('ignore: the default applies, the Ingress is served, the problem says so', () => {
    const { result, problems } = parse(with_({ 'limit-rps': '5; return 200', 'limit-connections': '7' }));
    expect(result?.denied).toBe(false);
    expect(result?.rateLimit).toMatchObject({ rps: null, connections: 7 });
    expect(problems).toEqual([
      'limit-rps: "5; return 200" is not a whole number from 0 to 1000000; ignored, the default applies',
    ]);
  });

  it('deny: the Ingress is denied and the value is not kept', () => {
    const { result, problems } = parse(with_({ 'auth-url': 'http://x/;}', 'limit-rps': '5' }));
    expect(result?.denied).toBe(true);
    expect(result?.externalAuth).toBe(null);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^auth-url: .*; its locations answer 503$/);
  });

  it('deny through an alias names the key the Ingress wrote', () => {
    const { result, problems } = parse(with_({ 'whitelist-source-range': '10.0.0.0/8, x' }));
    expect(result?.denied).toBe(true);
    expect(problems[0]).toMatch(/^whitelist-source-range: .*; its locations answer 503$/);
  });

  it('filter: a list keeps its valid entries and reports each bad one', () => {
    const { result, problems } = parse(
      with_({ 'enable-cors': 'true', 'cors-allow-origin': 'https://a.example, nope, https://b.example/x' }),
    );
    expect(result?.denied).toBe(false);
    expect(result?.cors?.origins).toEqual(['https://a.example']);
    expect(problems).toEqual([
      'cors-allow-origin: "nope" is not * or scheme://host[:port]; dropped, the valid entries are kept',
      'cors-allow-origin: "https://b.example/x" is not * or scheme://host[:port]; dropped, the valid entries are kept',
    ]);
  });

  it('a snippet above the risk level or while snippets are disabled is ignored', () => {
    const high = parse(with_({ 'configuration-snippet': 'add_header X-A "1";' }));
    expect([high.result?.denied, high.result?.snippets.configuration]).toEqual([false, null]);
    expect(high.problems[0]).toMatch(/^configuration-snippet: is Critical risk, .*; ignored$/);
    const disabled = parse(with_({ 'configuration-snippet': 'add_header X-A "1";' }), {
      annotationsRiskLevel: 'Critical',
    });
    expect([disabled.result?.denied, disabled.result?.snippets.configuration]).toEqual([false, null]);
    expect(disabled.problems[0]).toMatch(/^configuration-snippet: snippets are disabled: .*; ignored$/);
  });

  it('a key above the risk level takes its rule: a security key denies, another is ignored', () => {
    const config = { annotationsRiskLevel: 'Low' as const };
    const auth = parse(with_({ 'auth-url': 'http://auth.example/check' }), config);
    expect([auth.result?.denied, auth.result?.externalAuth]).toEqual([true, null]);
    expect(auth.problems[0]).toMatch(/^auth-url: is High risk, .*; its locations answer 503$/);
    const prefix = parse(with_({ 'x-forwarded-prefix': '/shop', 'upstream-vhost': 'a.example' }), config);
    expect([prefix.result?.denied, prefix.result?.forwardedPrefix, prefix.result?.upstreamVhost]).toEqual([
      false,
      null,
      'a.example',
    ]);
    expect(prefix.problems).toHaveLength(1);
    expect(prefix.problems[0]).toMatch(/^x-forwarded-prefix: is Medium risk, .*; ignored, the default applies$/);
  });

  it('a refused security annotation denies, another refused one is ignored', () => {
    const cn = parse(with_({ 'auth-tls-match-cn': 'CN=x' }));
    expect(cn.result?.denied).toBe(true);
    expect(cn.problems[0]).toMatch(/^auth-tls-match-cn: is not supported: .*; its locations answer 503$/);
    const alias = parse(with_({ 'server-alias': 'b.example' }));
    expect(alias.result?.denied).toBe(false);
    expect(alias.problems[0]).toMatch(/^server-alias: is not supported \(.*\); ignored$/);
  });

  it('a canary with any bad annotation is left out whole, as before', () => {
    const bad = parse(with_({ canary: 'true', 'canary-weight': 'lots' }));
    expect(bad.result).toBe(null);
    expect(bad.problems[0]).toMatch(/^canary-weight: .*; canary Ingress left out$/);
    // a canary value that is not a boolean counts as a canary, so a typo never makes a second main Ingress
    expect(parse(with_({ canary: 'ture', 'limit-rps': 'x' })).result).toBe(null);
    expect(parse(with_({ canary: 'false', 'limit-rps': 'x' })).result?.denied).toBe(false);
  });

  it('companions of auth-url cost nothing without it', () => {
    const { result, problems } = parse(with_({ 'auth-signin': 'not a url' }));
    expect(result?.denied).toBe(false);
    expect(problems).toEqual(['auth-signin: has no effect without auth-url; ignored']);
  });
});
