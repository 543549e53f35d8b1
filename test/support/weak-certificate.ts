/**
 * weakCertificate makes a self-signed RSA certificate with a 1024-bit key: valid X.509 that the
 * controller's checks accept, but that OpenSSL 3 at its default security level (Debian's) refuses
 * to load ("ee key too small"), so `nginx -t` refuses any config that names it. A tenant's way to
 * make nginx refuse a config that no validator of the controller's can see coming.
 */
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { webcrypto } from 'node:crypto';

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
