/**
 * The key allow-list agrees with this machine's nginx: each key (RSA and RSA-PSS on both sides of the size boundary,
 * EC on served and unserved curves, Ed25519, Ed448, DSA, and ML-DSA made with Node 24's crypto) gets a self-signed
 * certificate that a real nginx is given as `ssl_certificate`, and a TLS handshake (1.2 and 1.3, the project's
 * ssl-protocols and ingress-nginx's ssl-ciphers) asks it to serve; the model allows a key exactly when nginx served it.
 * Then each refused key in a TLS Secret: the sync leaves out only that host's certificate (the default one serves
 * it), and the admission webhook admits the Ingress with a warning naming the Secret, `data.tls.key` and the key type.
 * tooWeak (still the judge of a chain's issuers) keeps agreeing with `openssl s_server` on what OpenSSL loads.
 */
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, webcrypto } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebhookServer } from '../../src/http/webhook.js';
import { createLogger } from '../../src/log.js';
import { AdmissionJudge } from '../../src/model/admission.js';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import { checkTlsPair } from '../../src/model/certificate.js';
import { defaultGlobalConfig } from '../../src/model/config-map/defaults.js';
import { servedNames } from '../../src/model/dynamic-tables.js';
import { DynamicSplit } from '../../src/sync/dynamic-split.js';
import { MIN_CURVE_BITS, MIN_MODULUS_BITS, notServed, tooWeak } from '../../src/model/key-strength.js';
import { nginxBinary } from '../../src/nginx/binary.js';
import { issueCertificate, type KeyPair } from '../../src/tls/issue.js';
import { postReview } from '../support/admission-review.js';
import { ingress, ingressClass, serviceWithEndpoints, snapshotOf, tlsSecret } from '../support/manifests.js';
import { freePort } from '../support/net.js';
import { type RunningNginx, startNginx } from '../support/nginx.js';
import { weakCertificate } from '../support/weak-certificate.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ia-key-strength-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** opensslServes says whether `openssl s_server` loads a self-signed certificate for `key`. */
async function opensslServes(key: KeyObject, name: string): Promise<boolean> {
  const keyFile = join(dir, `${name}.key`);
  const certFile = join(dir, `${name}.crt`);
  await writeFile(keyFile, key.export({ type: 'pkcs8', format: 'pem' }));
  await execa('openssl', ['req', '-x509', '-key', keyFile, '-out', certFile, '-subj', '/CN=x', '-days', '1']);
  // it loads the certificate, then says ACCEPT and waits for a client: stopped there
  const server = execa('openssl', ['s_server', '-cert', certFile, '-key', keyFile, '-accept', '127.0.0.1:0'], {
    reject: false,
    timeout: 20_000,
    stdin: 'ignore',
    all: true,
  });
  let output = '';
  const accepting = new Promise<boolean>((resolve) => {
    server.all?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('ACCEPT')) resolve(true);
    });
    void server.then(() => resolve(false));
  });
  const serves = await accepting;
  server.kill();
  await server;
  return serves;
}

const KEYS: [string, () => KeyObject][] = [
  [`RSA ${MIN_MODULUS_BITS - 1}`, () => rsa(MIN_MODULUS_BITS - 1)],
  [`RSA ${MIN_MODULUS_BITS}`, () => rsa(MIN_MODULUS_BITS)],
  ['RSA 1024', () => rsa(1024)],
  ['RSA 2048', () => rsa(2048)],
  ['EC prime192v1', () => ec('prime192v1')],
  [`EC secp${MIN_CURVE_BITS}r1`, () => ec(`secp${MIN_CURVE_BITS}r1`)],
  ['EC prime256v1', () => ec('prime256v1')],
  ['Ed25519', () => generateKeyPairSync('ed25519').privateKey],
];

function rsa(modulusLength: number): KeyObject {
  return generateKeyPairSync('rsa', { modulusLength }).privateKey;
}
function ec(namedCurve: string): KeyObject {
  return generateKeyPairSync('ec', { namedCurve }).privateKey;
}

describe('tooWeak (an issuer in the chain)', () => {
  it.each(KEYS)('%s: refused exactly when OpenSSL refuses to load it', async (name, make) => {
    const key = make();
    expect(tooWeak(key) === null).toBe(await opensslServes(key, name.replace(/\W/g, '_')));
  });

  it('names the key', () => {
    expect(tooWeak(rsa(1024))).toBe('a 1024-bit RSA key');
    expect(tooWeak(ec('prime192v1'))).toBe('an EC key on prime192v1');
    expect(tooWeak(generateKeyPairSync('ml-dsa-44').privateKey)).toBe('an ML-DSA-44 key');
  });
});

/** A Sample is a key and a self-signed certificate for its own host, PEM. */
interface Sample {
  readonly name: string;
  readonly host: string;
  readonly key: KeyObject;
  readonly keyPem: string;
  readonly certPem: string;
}

/** The keys of the allow-list's test: every kind a tenant's Secret could hold, on both sides of each boundary. */
const SAMPLES: [string, () => KeyObject][] = [
  ['RSA 2048', () => rsa(2048)],
  [`RSA ${MIN_MODULUS_BITS}`, () => rsa(MIN_MODULUS_BITS)],
  [`RSA ${MIN_MODULUS_BITS - 1}`, () => rsa(MIN_MODULUS_BITS - 1)],
  ['RSA-PSS 2048', () => generateKeyPairSync('rsa-pss', { modulusLength: 2048 }).privateKey],
  ['EC P-256', () => ec('prime256v1')],
  ['EC P-384', () => ec('secp384r1')],
  ['EC P-521', () => ec('secp521r1')],
  ['EC P-224', () => ec('secp224r1')],
  ['EC secp256k1', () => ec('secp256k1')],
  ['EC brainpoolP256r1', () => ec('brainpoolP256r1')],
  ['EC brainpoolP384r1', () => ec('brainpoolP384r1')],
  ['Ed25519', () => generateKeyPairSync('ed25519').privateKey],
  ['Ed448', () => generateKeyPairSync('ed448').privateKey],
  ['DSA 2048', () => generateKeyPairSync('dsa', { modulusLength: 2048, divisorLength: 256 }).privateKey],
  // Node 24's OpenSSL 3.5 makes and reads these; nginx's OpenSSL 3.0 cannot read them at all
  ['ML-DSA-44', () => generateKeyPairSync('ml-dsa-44').privateKey],
  ['ML-DSA-65', () => generateKeyPairSync('ml-dsa-65').privateKey],
];

const slug = (name: string) => name.toLowerCase().replace(/[^a-z0-9]+/g, '-');

/** sample makes the certificate with openssl (3.0, as nginx's), or with @peculiar/x509 for a key openssl cannot read. */
async function sample(name: string, key: KeyObject): Promise<Sample> {
  const host = `${slug(name)}.keys.test`;
  const keyPem = key.export({ type: 'pkcs8', format: 'pem' }).toString();
  const keyFile = join(dir, `${slug(name)}.key`);
  const certFile = join(dir, `${slug(name)}.crt`);
  await writeFile(keyFile, keyPem, { mode: 0o600 });
  const args = ['req', '-x509', '-key', keyFile, '-out', certFile, '-subj', `/CN=${host}`, '-days', '1'];
  const made = await execa('openssl', [...args, '-addext', `subjectAltName=DNS:${host}`], { reject: false });
  const certPem = made.exitCode === 0 ? await readFile(certFile, 'utf8') : await issuedFor(host, key, certFile);
  return { name, host, key, keyPem, certPem };
}

/** issuedFor is a certificate for `key` (any type: only its SPKI is copied) signed by a throwaway ECDSA issuer. */
async function issuedFor(host: string, key: KeyObject, file: string): Promise<string> {
  x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const issuer = (await webcrypto.subtle.generateKey(algorithm, false, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const spki = new Uint8Array(createPublicKey(key).export({ type: 'spki', format: 'der' }));
  const notBefore = new Date(Date.now() - 60_000);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: '02',
    subject: `CN=${host}`,
    issuer: 'CN=keys issuer',
    notBefore,
    notAfter: new Date(notBefore.getTime() + 86_400_000),
    signingAlgorithm: algorithm,
    publicKey: spki,
    signingKey: issuer.privateKey,
    extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: host }])],
  });
  const pem = `${cert.toString('pem')}\n`;
  await writeFile(file, pem);
  return pem;
}

const samples: Sample[] = [];
/** served: each sample's name, and whether the real nginx served its certificate over TLS 1.2 and 1.3 */
const served = new Map<string, boolean>();

/** loads says whether `nginx -t` takes a config whose one server names the sample's certificate. */
async function loads(s: Sample): Promise<boolean> {
  const conf = join(dir, `${slug(s.name)}.conf`);
  await writeFile(conf, nginxConf([s], 1));
  const result = await execa(nginxBinary(), ['-t', '-p', `${dir}/`, '-c', conf], { reject: false, all: true });
  return result.exitCode === 0;
}

/** nginxConf serves each sample's certificate on its host, with the project's TLS defaults (nginx.conf.hbs). */
function nginxConf(list: readonly Sample[], port: number): string {
  const servers = list.map(
    (s) =>
      `  server { listen 127.0.0.1:${port} ssl; server_name ${s.host}; ` +
      `ssl_certificate ${join(dir, `${slug(s.name)}.crt`)}; ssl_certificate_key ${join(dir, `${slug(s.name)}.key`)}; ` +
      'return 200 "ok\\n"; }',
  );
  return [
    `pid ${join(dir, 'nginx.pid')};`,
    `error_log ${join(dir, 'error.log')};`,
    'worker_processes 1;',
    'events {}',
    'http {',
    '  access_log off;',
    `  ssl_protocols ${defaultGlobalConfig.sslProtocols.join(' ')};`,
    `  ssl_ciphers '${defaultGlobalConfig.sslCiphers}';`,
    '  ssl_prefer_server_ciphers on;',
    ...servers,
    '}',
    '',
  ].join('\n');
}

/** handshake says whether nginx completes a TLS handshake for `host` at `version`, serving that host's certificate. */
function handshake(port: number, host: string, version: 'TLSv1.2' | 'TLSv1.3'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(
      {
        host: '127.0.0.1',
        port,
        servername: host,
        rejectUnauthorized: false,
        minVersion: version,
        maxVersion: version,
      },
      () => {
        resolve(socket.getPeerCertificate().subject?.CN === host);
        socket.destroy();
      },
    );
    socket.on('error', () => resolve(false));
  });
}

describe("the allow-list: what nginx's OpenSSL serves", () => {
  let nginx: RunningNginx | undefined;

  beforeAll(async () => {
    for (const [name, make] of SAMPLES) samples.push(await sample(name, make()));
    const loadable: Sample[] = [];
    for (const s of samples) if (await loads(s)) loadable.push(s);
    for (const s of samples) served.set(s.name, false);
    const port = await freePort();
    await writeFile(join(dir, 'nginx.conf'), nginxConf(loadable, port));
    nginx = await startNginx(dir, port);
    for (const s of loadable)
      served.set(s.name, (await handshake(port, s.host, 'TLSv1.2')) && (await handshake(port, s.host, 'TLSv1.3')));
  }, 120_000);

  afterAll(async () => {
    await nginx?.stop();
  });

  it.each(SAMPLES.map(([name]) => name))('%s: allowed by the model exactly when nginx serves it', (name) => {
    const s = samples.find((x) => x.name === name)!;
    const allowed = notServed(s.key) === null;
    expect(allowed).toBe(served.get(name));
    const pair = checkTlsPair(s.certPem, s.keyPem, true);
    expect(pair.ok).toBe(allowed);
    // without the Lua balancer, nginx -t judges: the model takes any key that matches
    expect(checkTlsPair(s.certPem, s.keyPem).ok).toBe(true);
    if (!pair.ok) expect(pair.message).toBe(`data.tls.key is ${notServed(s.key)}, ${RULE_TAIL}`);
  });

  it('serves what a Secret usually holds, and refuses what nginx cannot read (the harness sees both)', () => {
    expect(served.get('RSA 2048')).toBe(true);
    expect(served.get('EC P-256')).toBe(true);
    expect(served.get('ML-DSA-44')).toBe(false);
  });

  it('names the key type', () => {
    const named = (name: string) => notServed(samples.find((x) => x.name === name)!.key);
    expect(named('ML-DSA-44')).toBe('an ML-DSA-44 key');
    expect(named('DSA 2048')).toBe('a DSA key');
    expect(named('EC P-224')).toBe('an EC key on secp224r1');
    expect(named(`RSA ${MIN_MODULUS_BITS - 1}`)).toBe(`a ${MIN_MODULUS_BITS - 1}-bit RSA key`);
  });
});

const RULE_TAIL =
  `which nginx's OpenSSL does not serve (it serves RSA keys of at least ${MIN_MODULUS_BITS} bits, 2048 in ` +
  'practice, EC keys on P-256, P-384, P-521, Ed25519 and Ed448)';

/** With the Lua balancer (the default), as the sync and the webhook's judge build. */
const luaBuild = {
  ...defaultBuildOptions,
  dynamic: { modules: [], packagePath: '/lua/?.lua;;', controlSocket: '/run/ia/control.sock', requestMetrics: true },
};

describe('a TLS Secret whose key nginx does not serve', () => {
  let good: KeyPair;
  let server: ReturnType<typeof createWebhookServer>;
  let port: number;
  let webhookPair: KeyPair;
  const refused = () => samples.filter((s) => !served.get(s.name));
  const name = (s: Sample) => `site-${slug(s.name)}`;
  const siteIngress = (s: Sample) =>
    ingress(
      name(s),
      { [s.host]: [{ path: '/', service: 'app' }] },
      {
        tls: [{ hosts: [s.host], secretName: `${name(s)}-tls` }],
      },
    );
  /** the cluster: the good Ingress, and each refused key's Secret (with its Ingress unless `candidates`) */
  const snapshot = (candidates = false) =>
    snapshotOf([
      ingressClass(),
      ...serviceWithEndpoints('app', [{ port: 8081 }]),
      tlsSecret('good-tls', good.certPem, good.keyPem),
      ingress(
        'good',
        { 'good.keys.test': [{ path: '/', service: 'app' }] },
        {
          tls: [{ hosts: ['good.keys.test'], secretName: 'good-tls' }],
        },
      ),
      ...refused().flatMap((s) => [
        tlsSecret(`${name(s)}-tls`, s.certPem, s.keyPem),
        ...(candidates ? [] : [siteIngress(s)]),
      ]),
    ]);

  beforeAll(async () => {
    good = await issueCertificate({ commonName: 'good.keys.test', dnsNames: ['good.keys.test'] });
    webhookPair = await issueCertificate({ commonName: 'webhook', ipAddresses: ['127.0.0.1'] });
    await writeFile(join(dir, 'webhook.crt'), webhookPair.certPem);
    await writeFile(join(dir, 'webhook.key'), webhookPair.keyPem, { mode: 0o600 });
    const judge = new AdmissionJudge();
    const current = snapshot(true);
    server = createWebhookServer({
      certFile: join(dir, 'webhook.crt'),
      keyFile: join(dir, 'webhook.key'),
      log: createLogger({ level: 'silent' }),
      judge: (operation, candidate) => judge.judge(current, { build: luaBuild }, operation, candidate),
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('the sync leaves out only that certificate: the host falls back to the default one, the others are served', () => {
    expect(refused().length).toBeGreaterThanOrEqual(8);
    const { model, problems } = buildModel(snapshot(), luaBuild);
    const { tables } = new DynamicSplit().split(model);
    const pushed = new Set(servedNames(tables.certificates));
    expect(pushed.has('good.keys.test')).toBe(true);
    expect(model.servers.find((s) => s.host === 'good.keys.test')?.inheritsCertificate).toBe(false);
    for (const s of refused()) {
      expect(pushed.has(s.host)).toBe(false);
      expect(model.servers.find((x) => x.host === s.host)?.inheritsCertificate).toBe(true);
      expect(problems).toContainEqual({
        kind: 'Ingress',
        namespace: 'default',
        name: name(s),
        field: 'spec.tls[0].secretName',
        message: `Secret default/${name(s)}-tls: data.tls.key is ${notServed(s.key)}, ${RULE_TAIL}; using the default certificate`,
      });
    }
    expect(problems.filter((p) => p.name === 'good')).toEqual([]);
  });

  it('the webhook admits the Ingress with a warning naming the Secret, data.tls.key and the key type', async () => {
    for (const s of refused()) {
      const response = await postReview(port, webhookPair.certPem, siteIngress(s), `u-${slug(s.name)}`);
      expect(response.allowed).toBe(true);
      expect(response.warnings?.join('\n')).toContain(
        `Secret default/${name(s)}-tls: data.tls.key is ${notServed(s.key)}, which nginx's OpenSSL does not serve`,
      );
    }
  });

  it('a weak key refused in the Lua mode never quotes the Secret', async () => {
    const weak = await weakCertificate('weak.test');
    const strict = checkTlsPair(weak.certPem, weak.keyPem, true);
    expect(strict).toEqual({ ok: false, message: `data.tls.key is a 1024-bit RSA key, ${RULE_TAIL}` });
    expect(JSON.stringify(strict)).not.toContain(
      createPrivateKey(weak.keyPem).export({ format: 'pem', type: 'pkcs8' }).toString().split('\n')[1],
    );
  });
});
