import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { webcrypto } from 'node:crypto';

type CryptoKey = webcrypto.CryptoKey;

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

/** KeyPair is a certificate and its private key, both PEM. */
export interface KeyPair {
  readonly certPem: string;
  readonly keyPem: string;
}

/** IssueOptions say who a certificate is for, and who signs it (itself when no issuer). */
export interface IssueOptions {
  readonly commonName: string;
  readonly dnsNames?: readonly string[];
  readonly ipAddresses?: readonly string[];
  readonly isCa?: boolean;
  readonly issuer?: KeyPair;
  readonly days?: number;
}

function toPem(label: string, der: ArrayBuffer): string {
  const body = Buffer.from(der)
    .toString('base64')
    .replace(/.{1,64}/g, '$&\n');
  return `-----BEGIN ${label}-----\n${body}-----END ${label}-----\n`;
}

async function importKey(pem: string): Promise<CryptoKey> {
  const der = Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
  return webcrypto.subtle.importKey('pkcs8', der, ALGORITHM, false, ['sign']);
}

/**
 * issueCertificate makes an ECDSA P-256 certificate: self-signed, or signed by `issuer`. Used
 * for the controller's fallback certificate, and for the test API server's CA and serving cert.
 */
export async function issueCertificate(options: IssueOptions): Promise<KeyPair> {
  const keys = (await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const notBefore = new Date(Date.now() - 60_000);
  const notAfter = new Date(notBefore.getTime() + (options.days ?? 365) * 86_400_000);
  const names = [
    ...(options.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(options.ipAddresses ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(options.isCa ?? false, undefined, true),
    new x509.KeyUsagesExtension(
      options.isCa
        ? x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature
        : x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
      true,
    ),
    await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
  ];
  if (!options.isCa)
    extensions.push(
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
    );
  if (names.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(names));
  const serialNumber = Buffer.from(webcrypto.getRandomValues(new Uint8Array(12)))
    .toString('hex')
    .replace(/^[89a-f]/, '1');
  const subject = `CN=${options.commonName}`;
  const cert = options.issuer
    ? await x509.X509CertificateGenerator.create({
        serialNumber,
        subject,
        issuer: new x509.X509Certificate(options.issuer.certPem).subject,
        notBefore,
        notAfter,
        signingAlgorithm: ALGORITHM,
        publicKey: keys.publicKey,
        signingKey: await importKey(options.issuer.keyPem),
        extensions,
      })
    : await x509.X509CertificateGenerator.createSelfSigned({
        serialNumber,
        name: subject,
        notBefore,
        notAfter,
        signingAlgorithm: ALGORITHM,
        keys,
        extensions,
      });
  const keyPem = toPem('PRIVATE KEY', (await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)) as ArrayBuffer);
  return { certPem: `${cert.toString('pem')}\n`, keyPem };
}
