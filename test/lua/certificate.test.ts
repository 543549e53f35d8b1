import { connect, type PeerCertificate } from 'node:tls';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { ServedCertificate } from '../../src/model/dynamic-tables.js';
import { issueCertificate, type KeyPair } from '../../src/tls/issue.js';
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

const served = (host: string, pair: KeyPair): ServedCertificate => ({ host, cert: pair.certPem, key: pair.keyPem });

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
  test('is pushed beside a host of the same name, each once; a server key named twice is refused', async () => {
    const entry = { server: '443/app.example.com', cert: wildcard.certPem, key: wildcard.keyPem };
    await push(served('app.example.com', exact), served('*.example.com', wildcard), entry);
    // only a Gateway server asks by key (templates/partials/gateway-server.hbs): the SNI lookup keeps the host's
    expect((await handshake('app.example.com')).subject.CN).toBe('app.example.com');
    const answer = await nginx.control.pushCertificates({ version: 'twice', certificates: [entry, entry] });
    expect(answer.refused).toEqual([
      { table: 'certificates', key: 'server 443/app.example.com', reason: 'named twice' },
    ]);
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
    // a Gateway server's entry: a key as the routes table's, and never beside a host
    [
      'a server key that is not [<address>:]<port>/<host>',
      () => ({ server: '443/a b', cert: exact.certPem, key: exact.keyPem }),
    ],
    ['a server key with a quote', () => ({ server: '443/a"b', cert: exact.certPem, key: exact.keyPem })],
    [
      'both host and server',
      () => ({ ...served('app.example.com', exact), server: '443/app.example.com' }) as unknown as ServedCertificate,
    ],
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
    expect(answer.refused).toEqual([expect.objectContaining({ key: 'app.example.com' })]);
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
