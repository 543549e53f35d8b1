/**
 * mlDsaCertificate makes a certificate whose key is ML-DSA-44 (signed by a throw-away RSA CA): Node 24's OpenSSL
 * 3.5 reads the key and finds it matches, so the controller's checks pass it, but nginx's OpenSSL 3.0 cannot read
 * the key. A tenant's way to make nginx refuse a pushed certificate that no validator of the controller's refuses.
 */
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { generateKeyPairSync, webcrypto } from 'node:crypto';

const RSA = {
  name: 'RSASSA-PKCS1-v1_5',
  hash: 'SHA-256',
  publicExponent: new Uint8Array([1, 0, 1]),
  modulusLength: 2048,
} as const;

/** mlDsaCertificate is `{ certPem, keyPem }` for `host`, with an ML-DSA-44 key. */
export async function mlDsaCertificate(host: string): Promise<{ certPem: string; keyPem: string }> {
  x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
  const ca = (await webcrypto.subtle.generateKey(RSA, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  // 'ml-dsa-44' is newer than @types/node's list of key types
  const leaf = generateKeyPairSync('ml-dsa-44' as 'ed25519');
  const notBefore = new Date(Date.now() - 60_000);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: '02',
    subject: `CN=${host}`,
    issuer: 'CN=ml-dsa test CA',
    notBefore,
    notAfter: new Date(notBefore.getTime() + 30 * 86_400_000),
    signingAlgorithm: RSA,
    publicKey: new x509.PublicKey(leaf.publicKey.export({ type: 'spki', format: 'der' })),
    signingKey: ca.privateKey,
    extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: host }])],
  });
  return {
    certPem: `${cert.toString('pem')}\n`,
    keyPem: leaf.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
  };
}
