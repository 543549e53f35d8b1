/**
 * weakCertificate makes a self-signed RSA certificate with a 1024-bit key: valid X.509 that the
 * controller's checks accept, but that OpenSSL 3 at its default security level (Debian's) refuses
 * to load ("ee key too small"), so `nginx -t` refuses any config that names it. A tenant's way to
 * make nginx refuse a config that no validator of the controller's can see coming.
 */
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { createPublicKey, generateKeyPairSync, webcrypto } from 'node:crypto';

const RSA = {
  name: 'RSASSA-PKCS1-v1_5',
  hash: 'SHA-256',
  publicExponent: new Uint8Array([1, 0, 1]),
  modulusLength: 1024,
} as const;

function pem(label: string, der: ArrayBuffer): string {
  return `-----BEGIN ${label}-----\n${Buffer.from(der)
    .toString('base64')
    .replace(/.{1,64}/g, '$&\n')}-----END ${label}-----\n`;
}

/** weakCertificate is `{ certPem, keyPem }` for `host`, with a 1024-bit RSA key. */
export async function weakCertificate(host: string): Promise<{ certPem: string; keyPem: string }> {
  x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
  const keys = (await webcrypto.subtle.generateKey(RSA, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const notBefore = new Date(Date.now() - 60_000);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: `CN=${host}`,
    notBefore,
    notAfter: new Date(notBefore.getTime() + 30 * 86_400_000),
    signingAlgorithm: RSA,
    keys,
    extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: host }])],
  });
  return {
    certPem: `${cert.toString('pem')}\n`,
    keyPem: pem('PRIVATE KEY', await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)),
  };
}

/**
 * mlDsaCertificate is `{ certPem, keyPem }` for `host` with an ML-DSA-44 key (made by Node 24's OpenSSL 3.5), signed
 * by a throwaway ECDSA issuer: Node reads it, nginx's OpenSSL 3.0 cannot (`nginx -t` fails on the key).
 */
export async function mlDsaCertificate(host: string): Promise<{ certPem: string; keyPem: string }> {
  x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
  const key = generateKeyPairSync('ml-dsa-44').privateKey;
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const issuer = (await webcrypto.subtle.generateKey(algorithm, false, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const notBefore = new Date(Date.now() - 60_000);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: '02',
    subject: `CN=${host}`,
    issuer: 'CN=ml-dsa issuer',
    notBefore,
    notAfter: new Date(notBefore.getTime() + 30 * 86_400_000),
    signingAlgorithm: algorithm,
    publicKey: new Uint8Array(createPublicKey(key).export({ type: 'spki', format: 'der' })),
    signingKey: issuer.privateKey,
    extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: host }])],
  });
  return { certPem: `${cert.toString('pem')}\n`, keyPem: key.export({ type: 'pkcs8', format: 'pem' }).toString() };
}
