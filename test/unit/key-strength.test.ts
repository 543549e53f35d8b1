/**
 * tooWeak agrees with this machine's OpenSSL: each key is made into a self-signed certificate that
 * `openssl s_server` (default security level, as nginx loads it) is asked to serve, on both sides of
 * each boundary. And checkTlsPair refuses those keys only when asked to (the Lua balancer's mode).
 */
import { createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkTlsPair } from '../../src/model/certificate.js';
import { MIN_CURVE_BITS, MIN_MODULUS_BITS, tooWeak } from '../../src/model/key-strength.js';
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

describe('tooWeak', () => {
  it.each(KEYS)('%s: refused exactly when OpenSSL refuses to serve it', async (name, make) => {
    const key = make();
    expect(tooWeak(key) === null).toBe(await opensslServes(key, name.replace(/\W/g, '_')));
  });

  it('names the key', () => {
    expect(tooWeak(rsa(1024))).toBe('a 1024-bit RSA key');
    expect(tooWeak(ec('prime192v1'))).toBe('an EC key on prime192v1');
  });
});

describe('checkTlsPair with strong keys', () => {
  it('refuses a 1024-bit RSA key only when asked to, naming tls.key and the rule', async () => {
    const weak = await weakCertificate('weak.test');
    expect(checkTlsPair(weak.certPem, weak.keyPem).ok).toBe(true);
    const strict = checkTlsPair(weak.certPem, weak.keyPem, true);
    expect(strict).toEqual({
      ok: false,
      message: expect.stringMatching(/^tls\.key is a 1024-bit RSA key, which OpenSSL refuses at its default security/),
    });
    // the message never quotes the Secret's data
    expect(JSON.stringify(strict)).not.toContain(
      createPrivateKey(weak.keyPem).export({ format: 'pem', type: 'pkcs8' }).toString().split('\n')[1],
    );
  });
});
