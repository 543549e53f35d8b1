/**
 * The pure parts of the nginx and model metrics: stub_status pages, /proc files, the counters kept monotonic across
 * processes, certificate facts under ingress-nginx's label formats, orphaned Ingresses and the config hash.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configHash } from '../../src/http/model-metrics.js';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import { certificateFacts, servedCertificates } from '../../src/model/certificate-info.js';
import { orphanIngresses } from '../../src/model/orphans.js';
import { emptySnapshot, type Snapshot } from '../../src/model/snapshot.js';
import { servedIngresses } from '../../src/kube/status.js';
import {
  parseAuxv,
  parseBootTime,
  parseIo,
  parseStat,
  parseStatm,
  sampleOf,
  USUAL_UNITS,
  UsageTotals,
  type ProcessSample,
} from '../../src/nginx/proc-usage.js';
import { parseStubStatus } from '../../src/nginx/stub-status.js';
import { issueCertificate } from '../../src/tls/issue.js';
import { ingress, ingressClass, serviceWithEndpoints, tlsSecret } from '../support/manifests.js';

describe('parseStubStatus', () => {
  const page = (a: number, acc: number, h: number, r: number, rd: number, w: number, wt: number, nl = '\n') =>
    `Active connections: ${a} ${nl}server accepts handled requests${nl} ${acc} ${h} ${r} ${nl}Reading: ${rd} Writing: ${w} Waiting: ${wt} ${nl}`;
  it.each([
    [
      "nginx 1.22's page",
      page(3, 10, 10, 25, 0, 1, 2),
      { active: 3, accepted: 10, handled: 10, requests: 25, reading: 0, writing: 1, waiting: 2 },
    ],
    [
      'large counters',
      page(1, 4294967297, 4294967296, 9007199254740991, 0, 1, 0),
      {
        active: 1,
        accepted: 4294967297,
        handled: 4294967296,
        requests: 9007199254740991,
        reading: 0,
        writing: 1,
        waiting: 0,
      },
    ],
    [
      'CRLF line ends',
      page(1, 2, 2, 3, 0, 1, 0, '\r\n'),
      { active: 1, accepted: 2, handled: 2, requests: 3, reading: 0, writing: 1, waiting: 0 },
    ],
    ['an HTML error page', '<html><body>404 Not Found</body></html>', null],
    ['empty', '', null],
    ['a page cut short', 'Active connections: 1 \nserver accepts handled requests\n 1 1 1 \n', null],
    ['a negative number', page(1, 2, 2, 3, 0, 1, 0).replace(' 2 2 3 ', ' -2 2 3 '), null],
    ['anything after it', `${page(1, 2, 2, 3, 0, 1, 0)}Active connections: 9 \n`, null],
  ])('%s', (_, text, expected) => expect(parseStubStatus(text)).toEqual(expected));
});

// A real line of /proc/<pid>/stat (52 fields), with the name in field 2 and the figures the metrics read.
const statLine = (name: string, fields: Partial<Record<number, number | string>> = {}) => {
  const values: (number | string)[] = [
    'S',
    1,
    1,
    1,
    0,
    -1,
    4194560,
    100,
    0,
    0,
    0,
    250,
    75,
    0,
    0,
    20,
    0,
    1,
    0,
    2177877,
    3133440,
    381,
    ...Array.from({ length: 28 }, () => 0),
  ];
  for (const [n, v] of Object.entries(fields)) if (v !== undefined) values[Number(n) - 3] = v;
  return `4242 (${name}) ${values.join(' ')}\n`;
};

describe('parseStat', () => {
  const expected = {
    pid: 4242,
    state: 'S',
    ppid: 1,
    utime: 250,
    stime: 75,
    starttime: 2177877,
    vsize: 3133440,
    rss: 381,
  };
  it.each([
    ['an nginx worker', statLine('nginx'), expected],
    ['a name with spaces and parentheses', statLine('nginx: (worker) x)'), expected],
    ['a zombie', statLine('nginx', { 3: 'Z', 4: 7 }), { ...expected, state: 'Z', ppid: 7 }],
    ['its own process', readFileSync('/proc/self/stat', 'utf8'), 'parses'],
    ['no name', '4242 S 1 1 1', null],
    ['cut short after the name', '4242 (nginx) S 1 1', null],
    ['a field that is not a number', statLine('nginx', { 14: 'x' }), null],
    ['empty', '', null],
  ])('%s', (_, text, want) => {
    const got = parseStat(text);
    if (want === 'parses') expect(got?.pid).toBe(process.pid);
    else expect(got).toEqual(want);
  });
});

describe('parseStatm, parseIo, parseBootTime', () => {
  it.each([
    ['seven page counts', '765 401 374 5 0 123 0\n', { size: 765, resident: 401 }],
    ['six', '765 401 374 5 0 123\n', null],
    ['a word', '765 x 374 5 0 123 0\n', null],
  ])('statm: %s', (_, text, want) => expect(parseStatm(text)).toEqual(want));

  it.each([
    [
      'the whole file',
      'rchar: 6976\nwchar: 10\nsyscr: 10\nsyscw: 0\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n',
      { readBytes: 4096, writeBytes: 8192 },
    ],
    ['rchar and wchar only (not storage I/O)', 'rchar: 6976\nwchar: 10\n', null],
    ['empty (not ours to read)', '', null],
  ])('io: %s', (_, text, want) => expect(parseIo(text)).toEqual(want));

  it.each([
    ['/proc/stat', 'cpu  1 2 3\nintr 5\nctxt 9\nbtime 1796402466\nprocesses 20\n', 1796402466],
    ['no btime', 'cpu  1 2 3\n', null],
  ])('boot time: %s', (_, text, want) => expect(parseBootTime(text)).toBe(want));
});

describe('parseAuxv', () => {
  const auxv = (pairs: [number, number][]) => {
    const buf = Buffer.alloc((pairs.length + 1) * 16);
    pairs.forEach(([k, v], i) => {
      buf.writeBigUInt64LE(BigInt(k), i * 16);
      buf.writeBigUInt64LE(BigInt(v), i * 16 + 8);
    });
    return buf;
  };
  it.each([
    [
      '64 KiB pages, 250 Hz',
      auxv([
        [33, 1],
        [6, 65536],
        [17, 250],
        [25, 9],
      ]),
      { pageSize: 65536, clockTicks: 250 },
    ],
    ['neither there', auxv([[33, 1]]), USUAL_UNITS],
    ['pairs after the end are not read', Buffer.concat([auxv([]), auxv([[6, 8192]])]), USUAL_UNITS],
  ])('%s', (_, data, want) => expect(parseAuxv(data)).toEqual(want));

  it("reads this process's as getconf does", () => {
    const getconf = (name: string) => Number(execFileSync('getconf', [name]).toString());
    expect(parseAuxv(readFileSync('/proc/self/auxv'))).toEqual({
      pageSize: getconf('PAGESIZE'),
      clockTicks: getconf('CLK_TCK'),
    });
  });
});

describe('UsageTotals', () => {
  const sample = (key: string, cpu: number, io: [number, number] | null = null, startTime = 100): ProcessSample => ({
    key,
    cpuSeconds: cpu,
    residentBytes: 1000,
    virtualBytes: 5000,
    startTime,
    io: io && { readBytes: io[0], writeBytes: io[1] },
  });
  it('adds each process once, keeps what an exited one used, and never goes down', () => {
    const totals = new UsageTotals();
    expect(totals.add([sample('1@1', 0.5, [10, 20], 90), sample('2@5', 1)])).toEqual({
      numProcs: 2,
      residentBytes: 2000,
      virtualBytes: 10000,
      oldestStartTime: 90,
      cpuSeconds: 1.5,
      readBytes: 10,
      writeBytes: 20,
    });
    // A reload: worker 2 exits, worker 3 starts; the master used 0.25 s more.
    expect(totals.add([sample('1@1', 0.75, [10, 30], 90), sample('3@9', 0.5)])).toMatchObject({
      numProcs: 2,
      cpuSeconds: 2.25,
      writeBytes: 30,
    });
    // A pid reused by another process is another key; a figure that went back is not taken back.
    expect(totals.add([sample('1@1', 0.5, [10, 30], 90), sample('3@12', 0.25)])).toMatchObject({ cpuSeconds: 2.5 });
    expect(totals.add([])).toBeNull();
    // After a restart the new master adds to the same counter.
    expect(totals.add([sample('7@20', 0.5, null, 120)])).toMatchObject({
      cpuSeconds: 3,
      oldestStartTime: 120,
      numProcs: 1,
    });
  });

  it('reads a sample in the kernel units', () => {
    const stat = parseStat(statLine('nginx'))!;
    expect(sampleOf(stat, { size: 765, resident: 401 }, null, 1_000, { pageSize: 4096, clockTicks: 100 })).toEqual({
      key: '4242@2177877',
      cpuSeconds: 3.25,
      residentBytes: 401 * 4096,
      virtualBytes: 3133440,
      startTime: 1_000 + 21778.77,
      io: null,
    });
    expect(sampleOf(stat, null, null, 0, { pageSize: 65536, clockTicks: 100 }).residentBytes).toBe(381 * 65536);
  });
});

describe('certificateFacts', () => {
  it('reads an ECDSA leaf and its chain as ingress-nginx labels it', async () => {
    const ca = await issueCertificate({ commonName: 'Test CA', isCa: true });
    const leaf = await issueCertificate({ commonName: 'a.example.com', dnsNames: ['a.example.com'], issuer: ca });
    const facts = certificateFacts(`${leaf.certPem}${ca.certPem}${leaf.keyPem}`)!;
    const notAfter = execFileSync('openssl', ['x509', '-noout', '-enddate', '-dateopt', 'iso_8601'], {
      input: leaf.certPem,
    })
      .toString()
      .trim()
      .replace('notAfter=', '');
    expect(facts.expireTime).toBe(Date.parse(notAfter) / 1000);
    expect(facts).toMatchObject({ issuerCommonName: 'Test CA', issuerOrganization: '', publicKeyAlgorithm: 'ECDSA' });
    const serial = execFileSync('openssl', ['x509', '-noout', '-serial'], { input: leaf.certPem })
      .toString()
      .trim()
      .replace('serial=', '');
    expect(facts.serialNumber).toBe(BigInt(`0x${serial}`).toString());
    expect(facts.identifier).toBe(`-${facts.serialNumber}`);
  });

  it('reads an RSA certificate with an organisation and a serialNumber attribute in its issuer', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ia-cert-facts-'));
    try {
      execFileSync('openssl', [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
        '-subj',
        '/O=Acme Corp/O=Second/serialNumber=77/CN=Acme Root',
        '-set_serial',
        '123456789012345678901234567890',
        '-days',
        '30',
      ]);
      const pem = readFileSync(join(dir, 'cert.pem'), 'utf8');
      expect(certificateFacts(pem)).toMatchObject({
        serialNumber: '123456789012345678901234567890',
        identifier: '77-123456789012345678901234567890',
        issuerCommonName: 'Acme Root',
        issuerOrganization: 'Acme Corp',
        publicKeyAlgorithm: 'RSA',
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    ['no certificate', 'hello'],
    ['a broken block', '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n'],
  ])('%s: null', (_, pem) => expect(certificateFacts(pem)).toBeNull());
});

describe('servedCertificates', () => {
  it('lists the hosts with a certificate of their own, and the catch-all with --default-ssl-certificate', async () => {
    const a = await issueCertificate({ commonName: 'a.example.com', dnsNames: ['a.example.com'] });
    const fallback = await issueCertificate({ commonName: 'fallback' });
    const snapshot = {
      ...emptySnapshot,
      ingressClasses: [ingressClass()],
      secrets: [
        tlsSecret('a-tls', a.certPem, a.keyPem, 'shop'),
        tlsSecret('fallback', fallback.certPem, fallback.keyPem),
      ],
      ingresses: [
        ingress(
          'a',
          { 'a.example.com': [{ path: '/', service: 'web' }], 'b.example.com': [{ path: '/', service: 'web' }] },
          // b names a Secret that is not there: it falls back to the default certificate and is not listed.
          {
            namespace: 'shop',
            tls: [
              { hosts: ['a.example.com'], secretName: 'a-tls' },
              { hosts: ['b.example.com'], secretName: 'nope' },
            ],
          },
        ),
      ],
    } as unknown as Snapshot;
    const listed = (options = defaultBuildOptions) =>
      servedCertificates(buildModel(snapshot, options).model).map((c) => [c.host, `${c.namespace}/${c.secretName}`]);
    expect(listed()).toEqual([['a.example.com', 'shop/a-tls']]);
    expect(listed({ ...defaultBuildOptions, defaultSslCertificate: 'default/fallback' })).toEqual([
      ['_', 'default/fallback'],
      ['a.example.com', 'shop/a-tls'],
    ]);
  });
});

describe('orphanIngresses', () => {
  const snapshot = {
    ...emptySnapshot,
    ingressClasses: [ingressClass()],
    services: [],
    endpointSlices: [],
    ingresses: [] as unknown[],
  };
  const world = (objects: { kind: string }[], ingresses: unknown[]): Snapshot =>
    ({
      ...snapshot,
      services: objects.filter((o) => o.kind === 'Service'),
      endpointSlices: objects.filter((o) => o.kind === 'EndpointSlice'),
      ingresses,
    }) as unknown as Snapshot;
  const report = (s: Snapshot) => orphanIngresses(s, servedIngresses(buildModel(s, defaultBuildOptions).model));
  it.each([
    [
      'a Service with a ready endpoint',
      [...serviceWithEndpoints('web', [{ port: 8080 }])],
      [ingress('ok', { 'a.example.com': [{ path: '/', service: 'web' }] })],
      [{ namespace: 'default', ingress: 'ok', noService: false, noEndpoint: false }],
    ],
    [
      'a Service that is not there',
      [],
      [ingress('lost', { 'a.example.com': [{ path: '/', service: 'web' }] })],
      [{ namespace: 'default', ingress: 'lost', noService: true, noEndpoint: false }],
    ],
    [
      'a Service whose only endpoint is not ready',
      [...serviceWithEndpoints('web', [{ port: 8080, ready: false }])],
      [ingress('idle', { 'a.example.com': [{ path: '/', service: 'web' }] })],
      [{ namespace: 'default', ingress: 'idle', noService: false, noEndpoint: true }],
    ],
    [
      'one good path and one without a Service: the Ingress is orphaned',
      [...serviceWithEndpoints('web', [{ port: 8080 }])],
      [
        ingress('half', {
          'a.example.com': [
            { path: '/', service: 'web' },
            { path: '/old', service: 'gone' },
          ],
        }),
      ],
      [{ namespace: 'default', ingress: 'half', noService: true, noEndpoint: false }],
    ],
    [
      'a port the Service does not have',
      [...serviceWithEndpoints('web', [{ port: 8080 }])],
      [ingress('port', { 'a.example.com': [{ path: '/', service: 'web', port: 81 }] })],
      [{ namespace: 'default', ingress: 'port', noService: false, noEndpoint: true }],
    ],
    [
      'an Ingress of another class is not ours to report',
      [],
      [{ ...ingress('other', { 'a.example.com': [{ path: '/', service: 'web' }] }), spec: { ingressClassName: 'x' } }],
      [],
    ],
  ])('%s', (_, objects, ingresses, expected) => expect(report(world(objects, ingresses))).toEqual(expected));
});

describe('configHash', () => {
  it('is a whole number under 2^53 that changes with the text and with a file', () => {
    const set = { config: 'events {}\n', files: [{ file: 'certificates/a.pem', pem: 'A' }] };
    const hash = configHash(set);
    expect(Number.isSafeInteger(hash)).toBe(true);
    expect(configHash({ ...set })).toBe(hash);
    expect(configHash({ ...set, config: 'events { }\n' })).not.toBe(hash);
    expect(configHash({ ...set, files: [{ file: 'certificates/a.pem', pem: 'B' }] })).not.toBe(hash);
  });
});
