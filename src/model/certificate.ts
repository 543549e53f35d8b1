/**
 * Certificate checks for TLS Secrets. node:crypto is used only to parse, which is deterministic
 * and does no I/O, so buildModel stays pure. Messages never quote the Secret's data.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { notServed, SERVED_KEY_RULE, tooWeak, WEAK_KEY_RULE } from './key-strength.js';
import type { Checked } from './validate.js';

const CERT_BLOCK = /-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\r\n]+-----END CERTIFICATE-----/g;
const KEY_BLOCK =
  /^-----BEGIN (RSA |EC )?PRIVATE KEY-----\r?\n[A-Za-z0-9+/=\r\n]+-----END (RSA |EC )?PRIVATE KEY-----\r?\n?$/;

/** TlsPair is a checked certificate chain and key, with the names the leaf is valid for. */
export interface TlsPair {
  readonly pem: string;
  readonly leaf: X509Certificate;
}

/**
 * checkTlsPair accepts PEM text whose blocks are only certificates and one key that matches the leaf; with
 * `strongKeys`, only a key nginx's OpenSSL serves and issuers it loads (key-strength.ts). A refusal names the Secret's
 * field (`data.tls.key`) and the key's type, never its data.
 */
export function checkTlsPair(certPem: string, keyPem: string, strongKeys = false): Checked<TlsPair> {
  const chain = certPem.match(CERT_BLOCK) ?? [];
  const rest = certPem.replace(CERT_BLOCK, '').trim();
  if (chain.length === 0 || rest !== '') return { ok: false, message: 'tls.crt is not a PEM certificate chain' };
  const key = `${keyPem.trim()}\n`;
  if (!KEY_BLOCK.test(key)) return { ok: false, message: 'tls.key is not one PEM private key' };
  try {
    const leaf = new X509Certificate(chain[0] ?? '');
    const issuers = chain.slice(1).map((block) => new X509Certificate(block));
    const privateKey = createPrivateKey(key);
    if (!leaf.checkPrivateKey(privateKey)) {
      return { ok: false, message: 'tls.key does not match the certificate in tls.crt' };
    }
    if (strongKeys) {
      const refused = notServed(privateKey);
      if (refused) return { ok: false, message: `data.tls.key is ${refused}, ${SERVED_KEY_RULE}` };
      for (const [i, issuer] of issuers.entries()) {
        const weakIssuer = tooWeak(issuer.publicKey);
        if (weakIssuer)
          return { ok: false, message: `data.tls.crt's certificate ${i + 2} has ${weakIssuer}, ${WEAK_KEY_RULE}` };
      }
    }
    return { ok: true, value: { pem: `${chain.join('\n')}\n${key}`, leaf } };
  } catch {
    return { ok: false, message: 'tls.crt or tls.key cannot be parsed' };
  }
}

/** certificateCovers says whether the leaf certificate is valid for an Ingress host (wildcards too). */
export function certificateCovers(leaf: X509Certificate, host: string): boolean {
  if (host.startsWith('*.')) {
    const names = (leaf.subjectAltName ?? '').split(/,\s*/);
    return names.includes(`DNS:${host}`);
  }
  return leaf.checkHost(host) !== undefined;
}
