import { describe, expect, it } from 'vitest';
import { checkHtpasswd, checkRealm } from '../../src/model/annotations/auth.js';
import { checkOrigin, origins } from '../../src/model/annotations/cors.js';
import { stableId } from '../../src/model/annotations/http-extras.js';
import { checkHashKey } from '../../src/model/annotations/load-balance.js';
import { checkRewriteTarget } from '../../src/model/annotations/rewrite.js';
import { checkRegexPath } from '../../src/model/regex-path.js';
import { checkCidr, checkHttpUrl } from '../../src/model/validate.js';

const ok = <T>(r: { ok: true; value: T } | { ok: false; message: string }) => (r.ok ? r.value : `error: ${r.message}`);

describe('annotation values', () => {
  it('rewrite-target: a path with capture groups only', () => {
    expect(ok(checkRewriteTarget('/api/$1/x$2'))).toBe('/api/$1/x$2');
    for (const bad of ['api', '/$host', '/a?b', 'https://x/', '/a b', '/${1}'])
      expect(checkRewriteTarget(bad).ok).toBe(false);
  });

  it('regex paths: the subset PCRE and JavaScript agree on', () => {
    expect(ok(checkRegexPath('/a(/|$)(.*)'))).toBe('/a(/|$)(.*)');
    expect(ok(checkRegexPath('/v[0-9]+/\\d{2,3}'))).toBe('/v[0-9]+/\\d{2,3}');
    for (const bad of ['a', '/(?<n>x)', '/(?i)x', '/\\u0041', '/x"', '/x;', '/('])
      expect(checkRegexPath(bad).ok).toBe(false);
  });

  it('CIDRs: no host bits, IPv6 too', () => {
    expect(ok(checkCidr('10.0.0.0/8'))).toBe('10.0.0.0/8');
    expect(ok(checkCidr('FD00::/8'))).toBe('fd00::/8');
    expect(ok(checkCidr('::ffff:10.0.0.0/104'))).toBe('::ffff:10.0.0.0/104');
    for (const bad of ['10.0.0.1/8', '10.0.0.0/33', 'fd00::1/8', 'all', '10.0.0.0/8/8'])
      expect(checkCidr(bad).ok).toBe(false);
  });

  it('redirect URLs: http(s), no variables, quotes or spaces', () => {
    expect(ok(checkHttpUrl('https://x.example.com:8443/a?b=c&d=%20'))).toBe('https://x.example.com:8443/a?b=c&d=%20');
    for (const bad of [
      'ftp://x/',
      'https://x/$uri',
      'https://x/ a',
      'https://x/"',
      'javascript:alert(1)',
      'https:///x',
    ])
      expect(checkHttpUrl(bad).ok).toBe(false);
  });

  it('CORS origins: * or scheme://host[:port], one-label wildcards', () => {
    const each = (list: string[]) => list.map((o) => ok(checkOrigin(o)));
    expect(origins(each(['https://b.example.com', 'HTTP://*.a.example.com:8080', 'https://b.example.com']))).toEqual([
      'http://*.a.example.com:8080',
      'https://b.example.com',
    ]);
    expect(origins(each(['https://a.example.com', '*']))).toBe(null);
    expect(origins([])).toEqual([]);
    for (const bad of ['a.example.com', 'https://a.example.com/', 'https://a b', ''])
      expect(checkOrigin(bad).ok).toBe(false);
  });

  it('htpasswd and realm', () => {
    expect(ok(checkHtpasswd('a:{PLAIN}x\nb:$apr1$x$y\n'))).toBe('a:{PLAIN}x\nb:$apr1$x$y\n');
    for (const bad of ['nocolon', 'a:', ':x', 'a b:x', 'a:x\r']) expect(checkHtpasswd(bad).ok).toBe(false);
    expect(checkRealm('off').ok).toBe(false);
    expect(checkRealm('$host').ok).toBe(false);
    expect(checkRealm('Members only').ok).toBe(true);
  });

  it('upstream-hash-by: known variables only', () => {
    expect(ok(checkHashKey('$request_uri-${http_x_user}'))).toBe('$request_uri-${http_x_user}');
    for (const bad of ['$nosuch', '$uri;', '"x"']) expect(checkHashKey(bad).ok).toBe(false);
  });

  it('stableId is a fixed 8-digit hash', () => {
    expect(stableId('a')).toBe(stableId('a'));
    expect(stableId('a')).toMatch(/^[0-9a-f]{8}$/);
    expect(stableId('a')).not.toBe(stableId('b'));
  });
});
