/**
 * Cookie names for session-cookie-name and canary-by-cookie: the validator, the ids that name
 * variables and upstreams, and the $http_cookie regex that reads a name nginx's $cookie_<name>
 * cannot (`hello-cookie`), checked for what it finds and, with recheck, for linear matching.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { checkCookieName } from '../../src/model/annotations/affinity.js';
import { cookieId, HttpExtras } from '../../src/model/annotations/http-extras.js';

process.env.RECHECK_SYNC_BACKEND = 'pure';
const { checkSync } = createRequire(import.meta.url)('recheck') as {
  checkSync(source: string, flags: string): { readonly status: string };
};

describe('checkCookieName', () => {
  it.each([
    'INGRESSCOOKIE',
    'route',
    'use_canary',
    'hello-cookie',
    'Canary-By-Cookie',
    'session.id',
    'a~b',
    'x'.repeat(64),
  ])('accepts %j', (name) => expect(checkCookieName(name)).toEqual({ ok: true, value: name }));
  it.each([
    '',
    'x'.repeat(65),
    'a b',
    'a;b',
    'a=b',
    'a,b',
    'a"b',
    "a'b",
    'a\\b',
    'a$b',
    'a{b}',
    'a(b)',
    'a/b',
    'a*b',
    'a+b',
    'a|b',
    'a\nb',
    'é',
    '-'.repeat(100_000),
  ])('rejects %j', (name) => {
    const checked = checkCookieName(name);
    expect(checked.ok).toBe(false);
    if (!checked.ok) expect(checked.message).toContain('letters, digits and _ - . ~');
  });
});

describe('cookieId', () => {
  it('keeps letters and digits and spells every other character as _ and its hex code', () => {
    expect(cookieId('hello-cookie')).toBe('hello_2dcookie');
    expect(cookieId('a_b.c~d')).toBe('a_5fb_2ec_7ed');
  });
  it('gives distinct names distinct ids', () => {
    const names = ['a-b', 'a_b', 'a.b', 'a~b', 'a_2db', 'a-_b', 'a_-b', 'a--b', 'a__b'];
    expect(new Set(names.map(cookieId)).size).toBe(names.length);
  });
});

describe('HttpExtras.cookie', () => {
  const read = (name: string) => {
    const extras = new HttpExtras();
    const variable = extras.cookie(name);
    const maps = [...extras.sections()[2].values()];
    return { variable, maps };
  };

  it('reads a name of letters, digits and _ as $cookie_<name>, with no map', () => {
    expect(read('use_canary')).toEqual({ variable: '$cookie_use_canary', maps: [] });
  });

  it('reads another name through one map on $http_cookie', () => {
    const { variable, maps } = read('hello-cookie');
    expect(variable).toBe('$ia_ck_hello_2dcookie');
    expect(maps).toEqual([
      {
        source: '$http_cookie',
        variable,
        fallback: '',
        entries: [{ key: '~*(?:^|[;,]) *hello\\-cookie *= *([^;]*)', value: '$1' }],
      },
    ]);
  });

  // The map's regex as JavaScript reads it (the same syntax in PCRE): `~*` is case-insensitive.
  const value = (name: string, header: string) => {
    const key = read(name).maps[0]!.entries[0]!.key;
    expect(key.startsWith('~*')).toBe(true);
    return new RegExp(key.slice(2), 'i').exec(header)?.[1] ?? '';
  };

  it.each([
    ['hello-cookie', 'hello-cookie=abc', 'abc'],
    ['hello-cookie', 'a=1; hello-cookie=abc; b=2', 'abc'],
    ['hello-cookie', 'a=1;hello-cookie = abc', 'abc'],
    ['hello-cookie', 'HELLO-COOKIE=abc', 'abc'],
    ['hello-cookie', 'hello-cookie=first; hello-cookie=second', 'first'],
    ['hello-cookie', 'xhello-cookie=abc', ''],
    ['hello-cookie', 'hello-cookies=abc', ''],
    ['hello-cookie', 'a=hello-cookie=abc', ''],
    ['hello-cookie', 'hello-cookie=', ''],
    ['hello.cookie', 'helloXcookie=abc', ''],
    ['Canary-By-Cookie', 'Canary-By-Cookie=always', 'always'],
  ])('cookie %s in %j is %j', (name, header, expected) => expect(value(name, header)).toBe(expected));

  // Every name gives the same shape (a literal between fixed parts): two stand for all.
  it.each(['hello-cookie', 'a.b~c'])('matches %s in linear time (recheck)', (name) => {
    const key = read(name).maps[0]!.entries[0]!.key;
    expect(checkSync(key.slice(2), 'i').status).toBe('safe');
  });
});
