import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkAuthUrl, checkAuthUrlHost } from '../../src/model/annotations/external-auth.js';
import { nameservers } from '../../src/nginx/resolvers.js';

describe('checkAuthUrl', () => {
  it.each([
    ['http://auth.example.com/check', 'auth.example.com'],
    ['https://auth.default.svc.cluster.local:8443/verify?app=a&b=c', 'auth.default.svc.cluster.local:8443'],
    ['https://$host/oauth2/auth', '$host'],
    ['https://$host/oauth2/start?rd=$escaped_request_uri', '$host'],
    ['http://10.0.0.5:4180/oauth2/auth', '10.0.0.5:4180'],
    ['http://[fd00::1]:8080/check', '[fd00::1]:8080'],
  ])('accepts %s (Host %s)', (url, host) => expect(checkAuthUrl(url)).toEqual({ ok: true, value: { url, host } }));

  it.each([
    'ftp://auth.example.com/',
    'auth.example.com/check',
    'http://auth.example.com/a b',
    'http://auth.example.com/"',
    "http://a/'",
    'http://a/;return 200',
    'http://a/{x}',
    'http://a/\\',
    'http://a/x\ny',
    'http://$remote_addr/x',
    'http://a/?u=$remote_user',
    'http://a/$hostname',
    'http://a/$host$',
    'http://$host.evil.com/x',
    'http://a/${host}',
    `https://a/${'x'.repeat(2048)}`,
  ])('refuses %j', (url) => expect(checkAuthUrl(url).ok).toBe(false));

  it.each([
    'http://$http_host/check',
    'https://$best_http_host/oauth2/auth',
    'http://$http_host:8080/x',
    'http://$arg_to/x',
    'http://$cookie_a/x',
  ])('finding 4: refuses the client-chosen authority of %s', (url) =>
    expect(checkAuthUrl(url)).toMatchObject({
      ok: false,
      message: expect.stringMatching(/which the client chooses|not an http\(s\) URL/),
    }),
  );

  it('finding 4: keeps variables in the path and query', () => {
    expect(checkAuthUrl('http://auth.example.com/check?for=$http_host$request_uri').ok).toBe(true);
  });
});

describe('checkAuthUrlHost', () => {
  it('finding 4: allows $host only where the server name is exact', () => {
    expect(checkAuthUrlHost('$host', 'a.example.com', '_')).toBeNull();
    expect(checkAuthUrlHost('auth.example.com', '*.example.com', '_')).toBeNull();
    expect(checkAuthUrlHost('$host', '*.example.com', '_')).toContain('wildcard host');
    expect(checkAuthUrlHost('$host', '_', '_')).toContain('rule without a host');
  });
});

describe('nameservers', () => {
  it(
    'reads the nameserver lines as nginx resolver addresses, IPv6 ' + 'bracketed, leaving out what is not an IP',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'ia-resolv-'));
      try {
        const file = join(dir, 'resolv.conf');
        await writeFile(
          file,
          '# comment\nsearch default.svc.cluster.local\nnameserver 10.96.0.10\nnameserver fd00::a\nnameserver ' +
            'fe80::1%eth0\nnameserver 10.96.0.10\noptions ndots:5\n',
        );
        expect(await nameservers(file)).toEqual(['10.96.0.10', '[fd00::a]']);
        expect(await nameservers(join(dir, 'missing'))).toEqual([]);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  );
});
