import { describe, expect, it } from 'vitest';
import {
  checkBool,
  checkBuffers,
  checkFilePath,
  checkGatewayHostname,
  checkHost,
  checkIp,
  checkLogFormat,
  checkPath,
  checkPathType,
  checkPortName,
  checkSeconds,
  checkSize,
  checkSslProtocols,
  checkWorkerProcesses,
  show,
} from '../../src/model/validate.js';
import { luaString, quote } from '../../src/render/quote.js';

const accepts = (check: (v: unknown) => { ok: boolean }, values: unknown[]) =>
  it.each(values.map((v) => [v]))('accepts %j', (v) => expect(check(v).ok).toBe(true));
const rejects = (check: (v: unknown) => { ok: boolean }, values: unknown[]) =>
  it.each(values.map((v) => [v]))('rejects %j', (v) => expect(check(v).ok).toBe(false));

describe('checkHost', () => {
  accepts(checkHost, ['foo.com', 'a', 'a-b.c-d.example', '*.foo.com', `${'x'.repeat(63)}.com`, '1.example.com']);
  rejects(checkHost, [
    '',
    'Foo.com',
    'foo_bar.com',
    '-a.com',
    'a-.com',
    '*',
    '*.com',
    'a.*.com',
    'foo.com.',
    '..',
    '10.0.0.1',
    'foo.com;',
    'foo.com bar',
    'foo"com',
    `${'x'.repeat(64)}.com`,
    `${'a.'.repeat(127)}ab`,
    'foo.com\n',
    42,
    undefined,
  ]);
});

describe('checkGatewayHostname', () => {
  accepts(checkGatewayHostname, ['foo.com', '*.foo.com', '*.com', `*.${'x'.repeat(63)}`, '*.a']);
  rejects(checkGatewayHostname, [
    '',
    '*',
    '*.',
    '*.-com',
    '*.com-',
    '*.Com',
    '*.*.com',
    `*.${'x'.repeat(64)}`,
    '10.0.0.1',
    '*.com\n',
    42,
  ]);
});

describe('checkPath', () => {
  accepts(checkPath, ['/', '/foo', '/foo/', '/a.b_c~d-e', '/v1/users/@me', '/a:b', '/a+b', '/a=b,c']);
  rejects(checkPath, [
    '',
    'foo',
    '/a b',
    '/a;b',
    '/a{b',
    '/a}b',
    '/$x',
    '/a"b',
    "/a'b",
    '/#x',
    '/a\\b',
    '//x',
    '/a/../b',
    '/./a',
    '/a%20b',
    '/a?b',
    '/é',
    '/a\nb',
    `/${'a'.repeat(2048)}`,
  ]);
});

describe('checkPathType', () => {
  it('maps ImplementationSpecific and a missing pathType to Prefix', () => {
    expect(checkPathType('ImplementationSpecific')).toEqual({ ok: true, value: 'Prefix' });
    expect(checkPathType(undefined)).toEqual({ ok: true, value: 'Prefix' });
    expect(checkPathType('Exact')).toEqual({ ok: true, value: 'Exact' });
    expect(checkPathType('Regex').ok).toBe(false);
  });
});

describe('checkIp', () => {
  accepts(checkIp, [
    '10.0.0.1',
    '0.0.0.0',
    '255.255.255.255',
    '::1',
    'fd00::1',
    '2001:db8::8a2e:370:7334',
    '::ffff:10.0.0.1',
    '1:2:3:4:5:6:7:8',
  ]);
  rejects(checkIp, [
    '256.0.0.1',
    '10.0.0',
    '10.0.0.1.2',
    '01.2.3.4x',
    ':::',
    '1::2::3',
    '1:2:3:4:5:6:7:8:9',
    'fe80::1%eth0',
    'localhost',
    '',
  ]);
});

describe('ConfigMap value checks', () => {
  it('reads sizes, durations, buffers, booleans, worker counts and protocols', () => {
    expect(checkSize('8M')).toEqual({ ok: true, value: '8m' });
    expect(checkSize('8 m').ok).toBe(false);
    expect(checkSeconds('60')).toEqual({ ok: true, value: '60s' });
    expect(checkSeconds('500ms')).toEqual({ ok: true, value: '500ms' });
    expect(checkSeconds('1.5').ok).toBe(false);
    expect(checkBuffers('4 8k')).toEqual({ ok: true, value: { number: 4, size: '8k' } });
    expect(checkBuffers('0 8k').ok).toBe(false);
    expect(checkBool('True')).toEqual({ ok: true, value: true });
    expect(checkBool('yes').ok).toBe(false);
    expect(checkWorkerProcesses('auto')).toEqual({ ok: true, value: 'auto' });
    expect(checkWorkerProcesses('0').ok).toBe(false);
    expect(checkSslProtocols('TLSv1.2  TLSv1.3')).toEqual({ ok: true, value: ['TLSv1.2', 'TLSv1.3'] });
    expect(checkSslProtocols('TLSv1.2;').ok).toBe(false);
    expect(checkPortName('http').ok).toBe(true);
    expect(checkPortName('8080').ok).toBe(false);
    expect(checkFilePath('/var/log/nginx/access.log').ok).toBe(true);
    expect(checkFilePath('../etc/passwd').ok).toBe(false);
  });

  it('accepts log formats whose $ only starts variables', () => {
    expect(checkLogFormat('$remote_addr "$request" ${status}').ok).toBe(true);
    expect(checkLogFormat('costs $5').ok).toBe(false);
    expect(checkLogFormat('a\nb').ok).toBe(false);
  });
});

describe('luaString', () => {
  it.each([
    ['443/shop.example.com', '"443/shop.example.com"'],
    ['127.0.0.201:8443/*.example.com', '"127.0.0.201:8443/*.example.com"'],
    ['fd00::1:443/_', '"fd00::1:443/_"'],
    ['a"b', '"a\\034b"'],
    ['}) os.exit() --', '"\\125\\041\\032os.exit\\040\\041\\032--"'],
    ['é', '"\\195\\169"'],
  ])('spells %j as %s', (value, literal) => expect(luaString(value)).toBe(literal));

  it('refuses what is not a string', () => {
    expect(() => luaString(443)).toThrow(/cannot spell/);
  });
});

describe('quote', () => {
  it.each([
    ['plain', '"plain"'],
    ['a"b', '"a\\"b"'],
    ['a\\b', '"a\\\\b"'],
    ['a;b{c}#d', '"a;b{c}#d"'],
    [80, '"80"'],
  ])('quotes %j as %s', (value, quoted) => expect(quote(value)).toBe(quoted));

  it.each([['a\nb'], ['a\0b'], ['\r'], ['\x7f']])('refuses the control character in %j', (value) => {
    expect(() => quote(value)).toThrow(/control character/);
  });

  it('refuses what is not a string or a number', () => {
    expect(() => quote(undefined)).toThrow(/cannot quote/);
    expect(() => quote(null)).toThrow(/cannot quote/);
  });
});

describe('show', () => {
  it.each([
    ['plain', '"plain"'],
    ['a\nb', '"a\\nb"'],
    ['del\u007f', '"del\\u007f"'],
    ['c1\u0085', '"c1\\u0085"'],
    ['line\u2028sep\u2029', '"line\\u2028sep\\u2029"'],
    ['é 日本', '"é 日本"'],
  ])('quotes %j as %s, every control and line separator escaped', (value, shown) => {
    expect(show(value)).toBe(shown);
    expect(show(value)).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/);
  });
});
