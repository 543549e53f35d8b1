import { connect, type PeerCertificate } from 'node:tls';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { ServedCertificate } from '../../src/model/pushed-tables.js';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import { DynamicSplit } from '../../src/sync/dynamic-split.js';
import { certificateEntries, keyedBody } from '../../src/model/dynamic-tables.js';
import { issueCertificate, type KeyPair } from '../../src/tls/issue.js';
import { ingress, ingressClass, serviceWithEndpoints, snapshotOf, tlsSecret } from '../support/manifests.js';
import { call, LUA_LITERAL_PROBE, type LuaNginx, startLuaNginx } from './harness.js';

let nginx: LuaNginx;
let exact: KeyPair;
let wildcard: KeyPair;
let version = 0;

/** handshake connects with `servername` (none when null) and returns the certificate nginx served. */
function handshake(servername: string | null): Promise<PeerCertificate> {
  return new Promise((done, fail) => {
    const socket = connect(
      { host: '127.0.0.1', port: nginx.tlsPort, rejectUnauthorized: false, ...(servername ? { servername } : {}) },
      () => {
        const cert = socket.getPeerCertificate();
        socket.destroy();
        done(cert);
      },
    );
    socket.on('error', fail);
  });
}

/** served is a Secret's entry serving `host` (the Secret named after the host). */
const served = (host: string, pair: KeyPair): ServedCertificate => ({
  secret: `default/${host.toLowerCase().replace(/[^a-z0-9.-]/g, 'x')}`,
  cert: pair.certPem,
  key: pair.keyPem,
  hosts: [host],
  servers: [],
});

async function push(...certificates: ServedCertificate[]): Promise<string> {
  return (await nginx.control.pushCertificates({ version: `c${++version}`, certificates })).version;
}

beforeAll(async () => {
  nginx = await startLuaNginx();
  [exact, wildcard] = await Promise.all([
    issueCertificate({ commonName: 'app.example.com', dnsNames: ['app.example.com'] }),
    issueCertificate({ commonName: '*.example.com', dnsNames: ['*.example.com'] }),
  ]);
  await push(served('app.example.com', exact), served('*.example.com', wildcard));
});

afterAll(async () => {
  await nginx?.stop();
});

describe('by SNI', () => {
  test('the exact host gets its certificate, before the wildcard', async () => {
    expect((await handshake('app.example.com')).subject.CN).toBe('app.example.com');
    expect((await handshake('APP.example.com')).subject.CN).toBe('app.example.com');
  });

  test('a wildcard covers exactly one more label', async () => {
    expect((await handshake('other.example.com')).subject.CN).toBe('*.example.com');
    expect((await handshake('a.b.example.com')).subject.CN).toBe('default.invalid');
    expect((await handshake('example.com')).subject.CN).toBe('default.invalid');
  });

  test('an unknown name or no SNI at all gets the default certificate', async () => {
    expect((await handshake('unknown.test')).subject.CN).toBe('default.invalid');
    expect((await handshake(null)).subject.CN).toBe('default.invalid');
  });

  test('every worker serves it (many new connections)', async () => {
    const names = await Promise.all(Array.from({ length: 30 }, () => handshake('app.example.com')));
    expect(new Set(names.map((c) => c.subject.CN))).toEqual(new Set(['app.example.com']));
  });
});

describe('a renewed certificate', () => {
  test('is served on the next handshake, with no reload', async () => {
    const before = await handshake('app.example.com');
    const renewed = await issueCertificate({ commonName: 'app.example.com', dnsNames: ['app.example.com'] });
    await push(served('app.example.com', renewed), served('*.example.com', wildcard));
    const after = await Promise.all(Array.from({ length: 20 }, () => handshake('app.example.com')));
    for (const cert of after) {
      expect(cert.fingerprint256).not.toBe(before.fingerprint256);
      expect(cert.serialNumber).toBe(after[0]!.serialNumber);
    }
    expect(await nginx.errorLog()).not.toContain('reconfiguring');
  });

  test('a host removed from the table falls back to the default', async () => {
    await push(served('*.example.com', wildcard));
    expect((await handshake('app.example.com')).subject.CN).toBe('*.example.com');
    await push();
    expect((await handshake('app.example.com')).subject.CN).toBe('default.invalid');
    await push(served('app.example.com', exact), served('*.example.com', wildcard));
  });
});

describe('a Gateway server’s entry', () => {
  test('is pushed beside a host of the same name, each once; a server key served twice is refused', async () => {
    const entry = {
      secret: 'default/gw',
      cert: wildcard.certPem,
      key: wildcard.keyPem,
      hosts: [],
      servers: ['443/app.example.com'],
    };
    await push(served('app.example.com', exact), served('*.example.com', wildcard), entry);
    // only a Gateway server asks by key (templates/partials/gateway-server.hbs): the SNI lookup keeps the host's
    expect((await handshake('app.example.com')).subject.CN).toBe('app.example.com');
    const answer = await nginx.control.pushCertificates({
      version: 'twice',
      certificates: [entry, { ...entry, secret: 'default/other' }],
    });
    expect(answer.refused).toEqual([
      {
        table: 'certificates',
        key: 'default/other',
        reason: 'server 443/app.example.com is served by another certificate (default/gw)',
      },
    ]);
    await push(served('app.example.com', exact), served('*.example.com', wildcard));
  });
});

describe('pushed as deltas, entry by entry (keyed.lua)', () => {
  const app = () => served('app.example.com', exact);
  const star = () => served('*.example.com', wildcard);
  const table = (v: string, ...certificates: ServedCertificate[]) => ({ version: v, certificates });
  /** decodedByWorker asks /tables-decoded on new connections until both workers answered: pid -> certificates decoded */
  const decodedByWorker = async () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 200 && counts.size < 2; i++) {
      const a = await call(nginx, '/tables-decoded');
      counts.set(a.worker!, Number(a.body.split(' ')[1]));
    }
    expect(counts.size).toBe(2);
    return counts;
  };

  test('a host moves from one Secret to another in one delta, and back', async () => {
    const held = table(`c${++version}`, app(), star());
    await nginx.control.pushCertificates(held);
    // the host now served by the wildcard's Secret, the app Secret by another host
    const moved = table(
      `c${++version}`,
      { ...app(), hosts: ['other.example.com'] },
      { ...star(), hosts: ['*.example.com', 'app.example.com'] },
    );
    expect((await nginx.control.pushCertificates(moved, held)).refused).toEqual([]);
    expect((await handshake('app.example.com')).subject.CN).toBe('*.example.com');
    expect((await handshake('other.example.com')).subject.CN).toBe('app.example.com');
    expect((await nginx.control.pushCertificates(held, moved)).refused).toEqual([]);
    expect((await handshake('app.example.com')).subject.CN).toBe('app.example.com');
    // other.example.com is the wildcard's again: the app Secret released it
    expect((await handshake('other.example.com')).subject.CN).toBe('*.example.com');
  });

  test("a Secret removed takes its hosts with it; another Secret's hosts stay", async () => {
    const held = table(`c${++version}`, app(), star());
    await nginx.control.pushCertificates(held);
    const without = table(`c${++version}`, star());
    const body = JSON.parse(keyedBody(certificateEntries(without), certificateEntries(held)));
    expect(body).toMatchObject({ set: [], remove: ['default/app.example.com'] });
    await nginx.control.pushCertificates(without, held);
    expect((await handshake('app.example.com')).subject.CN).toBe('*.example.com');
    await nginx.control.pushCertificates(held, without);
    expect((await handshake('app.example.com')).subject.CN).toBe('app.example.com');
  });

  test('a delta claiming a host another Secret keeps is refused alone; that Secret keeps serving it', async () => {
    const held = table(`c${++version}`, app(), star());
    await nginx.control.pushCertificates(held);
    const thief = { ...star(), secret: 'default/thief', hosts: ['app.example.com'] };
    const answer = await nginx.control.pushCertificates(table(`c${++version}`, app(), star(), thief), held);
    expect(answer.refused).toEqual([
      {
        table: 'certificates',
        key: 'default/thief',
        reason: 'host app.example.com is served by another certificate (default/app.example.com)',
      },
    ]);
    expect((await handshake('app.example.com')).subject.CN).toBe('app.example.com');
    await push(app(), star());
  });

  test("a push costs each worker the certificates it changed: the others' parsed keys are kept", async () => {
    const held = table(`c${++version}`, app(), star());
    await nginx.control.pushCertificates(held);
    for (let i = 0; i < 20; i++) await handshake('app.example.com');
    const before = await decodedByWorker();
    // another Secret comes: app.example.com's entry is not decoded (nor its PEM parsed) again
    const more = table(`c${++version}`, app(), star(), served('new.example.com', exact));
    await nginx.control.pushCertificates(more, held);
    for (let i = 0; i < 20; i++) expect((await handshake('app.example.com')).subject.CN).toBe('app.example.com');
    expect(await decodedByWorker()).toEqual(before);
    await push(app(), star());
  });
});

describe('certificates once per Secret', () => {
  const HOSTS = 128;
  const LUA = {
    modules: [],
    packagePath: '/lua/?.lua;;',
    controlSocket: '/run/ia/control.sock',
    requestMetrics: false,
  };

  test(`one Secret of about 60 KB named by ${HOSTS} TLS hosts pushes a table of about one certificate`, async () => {
    const shared = await issueCertificate({ commonName: '*.shared.test', dnsNames: ['*.shared.test'] });
    // a long chain: the leaf, then 100 copies of another certificate (about 60 KB: clients take at most 100 KB)
    const filler = (await issueCertificate({ commonName: 'filler' })).certPem;
    const chain = shared.certPem + filler.repeat(100);
    const hosts = Array.from({ length: HOSTS }, (_, i) => `h${i}.shared.test`);
    const snapshot = snapshotOf([
      ingressClass(),
      ...serviceWithEndpoints('web', [{ ip: '127.0.0.2', port: 8080 }]),
      tlsSecret('shared-tls', chain, shared.keyPem),
      ingress('many', Object.fromEntries(hosts.map((h) => [h, [{ path: '/', service: 'web' }]])), {
        tls: [{ hosts, secretName: 'shared-tls' }],
      }),
    ]);
    const result = buildModel(snapshot, { ...defaultBuildOptions, dynamic: LUA });
    expect(result.problems).toEqual([]);
    const { certificates } = new DynamicSplit().split(result.model).tables;
    const size = JSON.stringify(certificates).length;
    const pem = chain.length + shared.keyPem.length;
    // once, not once per host: the hosts add their names only
    expect(certificates.certificates).toHaveLength(1);
    expect(certificates.certificates[0]!.hosts).toHaveLength(HOSTS);
    expect(size).toBeLessThan(pem * 1.05 + HOSTS * 32);
    // nginx takes it through a 4 MiB control channel (once per host it would have been 7 MB) and serves every host
    expect((await nginx.control.pushCertificates(certificates)).refused).toEqual([]);
    for (const host of [hosts[0]!, hosts[63]!, hosts[HOSTS - 1]!])
      expect((await handshake(host)).subject.CN).toBe('*.shared.test');
    await push(served('app.example.com', exact), served('*.example.com', wildcard));
  });
});

describe('a Lua string literal written by luaString', () => {
  test('reads back as written, through nginx’s block parser and Lua', async () => {
    expect((await call(nginx, '/lua-literal')).body).toBe(LUA_LITERAL_PROBE);
  });
});

describe('a bad certificate push', () => {
  const bad: [string, () => ServedCertificate][] = [
    ['a key that is not PEM', () => ({ ...served('bad.example.com', exact), key: 'not a key' })],
    ['a cert that is not PEM', () => ({ ...served('bad.example.com', exact), cert: 'MIIB...' })],
    [
      'a PEM cert that does not parse',
      () => ({
        ...served('bad.example.com', exact),
        cert: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n',
      }),
    ],
    ['an upper-case host', () => served('Bad.example.com', exact)],
    ['a host with a space', () => served('bad example.com', exact)],
    ['a wildcard in the middle', () => served('a.*.example.com', exact)],
    // a Gateway server's entry: a key as the routes table's
    [
      'a server key that is not [<address>:]<port>/<host>',
      () => ({ ...served('bad.example.com', exact), servers: ['443/a b'] }),
    ],
    ['a server key with a quote', () => ({ ...served('bad.example.com', exact), servers: ['443/a"b'] })],
    ['a secret that is not <namespace>/<name>', () => ({ ...served('bad.example.com', exact), secret: 'a b' })],
    [
      'hosts that are not an array',
      () => ({ ...served('bad.example.com', exact), hosts: 'bad.example.com' }) as unknown as ServedCertificate,
    ],
    [
      'an unknown field',
      () => ({ ...served('bad.example.com', exact), host: 'bad.example.com' }) as unknown as ServedCertificate,
    ],
    ['a host another entry serves', () => ({ ...served('app.example.com', exact), secret: 'default/thief' })],
  ];

  test.each(bad)('%s is refused alone: every other entry is served', async (_what, entry) => {
    const answer = await nginx.control.pushCertificates({
      version: `c${++version}`,
      certificates: [served('app.example.com', exact), served('*.example.com', wildcard), entry()],
    });
    expect(answer.refused).toHaveLength(1);
    const [refused] = answer.refused;
    expect(refused!.table).toBe('certificates');
    // never an echo of key material
    expect(refused!.reason).not.toContain('BEGIN');
    expect(refused!.reason).not.toContain(exact.keyPem.split('\n')[1]!.slice(0, 20));
    expect((await handshake('app.example.com')).subject.CN).toBe('app.example.com');
    expect((await handshake('bad.example.com')).subject.CN).toBe('*.example.com');
  });

  test('a refused certificate keeps its previous value', async () => {
    await push(served('app.example.com', exact), served('*.example.com', wildcard));
    const broken = { ...served('app.example.com', wildcard), key: 'not a key' };
    const answer = await nginx.control.pushCertificates({ version: `c${++version}`, certificates: [broken] });
    expect(answer.refused).toEqual([expect.objectContaining({ key: 'default/app.example.com' })]);
    expect((await handshake('app.example.com')).subject.CN).toBe('app.example.com');
    // the wildcard was not in that table: it is gone
    expect((await handshake('other.example.com')).subject.CN).toBe('default.invalid');
    await push(served('app.example.com', exact), served('*.example.com', wildcard));
  });

  test('the error log holds no key material', async () => {
    const log = await nginx.errorLog();
    for (const pem of [exact.keyPem, wildcard.keyPem]) {
      for (const line of pem.split('\n').filter((l) => l && !l.startsWith('-----'))) expect(log).not.toContain(line);
    }
  });
});
