/**
 * The facts /metrics tells about each served certificate (ingress-nginx's `ssl_expire_time_seconds` and
 * `ssl_certificate_info`), read from the model. node:crypto only parses, so this stays pure.
 */
import { X509Certificate } from 'node:crypto';
import type { Certificate, NginxModel } from './nginx-model.js';
import { DEFAULT_CERTIFICATE_FILE } from './tls.js';

/** CertificateFacts are a leaf certificate's fields under ingress-nginx's label names and formats. */
export interface CertificateFacts {
  /** notAfter, unix seconds */
  readonly expireTime: number;
  /** the serial number in decimal (Go's big.Int String) */
  readonly serialNumber: string;
  /** ingress-nginx's SSLCert.Identifier(): the issuer's serialNumber attribute (usually empty), `-`, the serial */
  readonly identifier: string;
  readonly issuerCommonName: string;
  /** the issuer's first O, or empty */
  readonly issuerOrganization: string;
  /** Go's x509.PublicKeyAlgorithm names: RSA, DSA, ECDSA, Ed25519; 0 for another (Go's unknown) */
  readonly publicKeyAlgorithm: string;
}

const CERT_BLOCK = /-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\r\n]+-----END CERTIFICATE-----/;

const ALGORITHMS: Record<string, string> = {
  rsa: 'RSA',
  'rsa-pss': 'RSA',
  dsa: 'DSA',
  ec: 'ECDSA',
  ed25519: 'Ed25519',
};

/** attribute is the first value of a distinguished name's attribute, as node:crypto prints names (one per line). */
function attribute(name: string, key: string): string {
  for (const line of name.split('\n')) if (line.startsWith(`${key}=`)) return line.slice(key.length + 1);
  return '';
}

/** certificateFacts reads the first certificate of `pem` (the leaf of a chain, a key may follow); null if none parses. */
export function certificateFacts(pem: string): CertificateFacts | null {
  const block = CERT_BLOCK.exec(pem)?.[0];
  if (!block) return null;
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(block);
  } catch {
    return null;
  }
  const serialNumber = BigInt(`0x${leaf.serialNumber}`).toString();
  return {
    expireTime: Math.floor(leaf.validToDate.getTime() / 1000),
    serialNumber,
    identifier: `${attribute(leaf.issuer, 'serialNumber')}-${serialNumber}`,
    issuerCommonName: attribute(leaf.issuer, 'CN'),
    issuerOrganization: attribute(leaf.issuer, 'O'),
    publicKeyAlgorithm: ALGORITHMS[leaf.publicKey.asymmetricKeyType ?? ''] ?? '0',
  };
}

/** ServedCertificate is a host served with a certificate from a Secret. */
export interface ServedCertificate {
  readonly host: string;
  /** the Secret's namespace and name */
  readonly namespace: string;
  readonly secretName: string;
  readonly certificate: Certificate & { readonly pem: string };
}

/**
 * servedCertificates lists each host served with a Secret's certificate, in the model's order: the hosts with TLS of
 * their own, and the catch-all `_` when `--default-ssl-certificate` names one (as ingress-nginx's default server).
 * Hosts that fall back to the default certificate and the self-signed fallback are left out, as ingress-nginx leaves
 * out servers without a certificate of their own.
 */
export function servedCertificates(model: NginxModel): ServedCertificate[] {
  const byFile = new Map(model.certificates.map((c) => [c.file, c]));
  const served: ServedCertificate[] = [];
  const add = (host: string, certificate: Certificate | undefined) => {
    if (!certificate || certificate.pem === null) return;
    const slash = certificate.id.indexOf('/');
    if (slash < 0) return; // the controller's own, not a Secret's
    served.push({
      host,
      namespace: certificate.id.slice(0, slash),
      secretName: certificate.id.slice(slash + 1),
      certificate: certificate as ServedCertificate['certificate'],
    });
  };
  add(model.defaultServer.host, byFile.get(DEFAULT_CERTIFICATE_FILE));
  for (const server of model.servers) {
    if (server.inheritsCertificate || server.certificateFile === null) continue;
    add(server.host, byFile.get(server.certificateFile));
  }
  return served;
}
