/**
 * What nginx's OpenSSL (Debian's 3.0, security level 2) serves as a server certificate's key. With rendered
 * certificates `nginx -t` judges what it loads; a certificate pushed to the Lua balancer is loaded only at the
 * handshake, and a key OpenSSL loads may still never be served (no signature scheme a client offers), so in that
 * mode the model judges keys by an allow-list, the one test/unit/key-strength.test.ts checks against a real nginx.
 */
import type { KeyObject } from 'node:crypto';

/**
 * MIN_MODULUS_BITS is the smallest RSA or DSA modulus OpenSSL gives 112 bits of security: its estimate
 * (ossl_ifc_ffc_compute_security_bits, rounded to a multiple of 8) reaches 112 there. Measured with
 * OpenSSL 3.0.19: a self-signed 1962-bit RSA key is refused, a 1963-bit one loads; 2048 is the usual size.
 */
export const MIN_MODULUS_BITS = 1963;

/** MIN_CURVE_BITS is the smallest EC curve order that makes 112 bits (half of it): P-224 loads, P-192 does not. */
export const MIN_CURVE_BITS = 224;

/**
 * SERVED_CURVES are the EC curves (Node's names, and the usual ones) nginx's OpenSSL serves a certificate on: those
 * TLS 1.3 has signature schemes for and every client offers. P-224, secp256k1 and the brainpool curves load but fail
 * every handshake (TLS 1.3 has no scheme for them in OpenSSL 3.0, and no default client offers them for TLS 1.2).
 */
export const SERVED_CURVES: ReadonlyMap<string, string> = new Map([
  ['prime256v1', 'P-256'],
  ['secp384r1', 'P-384'],
  ['secp521r1', 'P-521'],
]);

/** OPENSSL_3_0_TYPES are the key types nginx's OpenSSL 3.0 can read at all (ML-DSA, SLH-DSA: it cannot). */
const OPENSSL_3_0_TYPES = new Set(['rsa', 'rsa-pss', 'dsa', 'ec', 'ed25519', 'ed448']);

/**
 * tooWeak says what OpenSSL at security level 2 refuses to load in `key` (`a 1024-bit RSA key`), or null when it
 * loads it: RSA and DSA by modulus, EC by its named curve's size (which the curve names carry: prime192v1,
 * secp224r1, brainpoolP256r1), and a type OpenSSL 3.0 cannot read (its security bits are unknown: refused).
 * Ed25519 and Ed448 are strong enough by construction.
 */
export function tooWeak(key: KeyObject): string | null {
  const details = key.asymmetricKeyDetails ?? {};
  const type = key.asymmetricKeyType ?? 'unknown';
  if (type === 'rsa' || type === 'rsa-pss' || type === 'dsa') {
    const n = details.modulusLength;
    return n !== undefined && n < MIN_MODULUS_BITS ? `a ${n}-bit ${type.toUpperCase()} key` : null;
  }
  if (type === 'ec') {
    const size = Number(/(\d+)/.exec(details.namedCurve ?? '')?.[1]);
    return size < MIN_CURVE_BITS ? `an EC key on ${details.namedCurve}` : null;
  }
  return OPENSSL_3_0_TYPES.has(type) ? null : keyOfType(type);
}

/**
 * notServed says why nginx's OpenSSL cannot serve a certificate whose key is `key` (`an EC key on secp224r1`,
 * `an ML-DSA-44 key`), or null when it can: the allow-list is RSA (and RSA-PSS) of at least MIN_MODULUS_BITS, EC on
 * SERVED_CURVES, Ed25519 and Ed448 (served over TLS 1.2 and 1.3 to OpenSSL's and Node's clients; browsers do not
 * take Ed25519 or Ed448 certificates yet). Everything else is refused: DSA (TLS 1.3 has none, ingress-nginx's
 * ssl-ciphers no DSS suite), other curves, and types OpenSSL 3.0 cannot read (ML-DSA, which Node 24 reads).
 */
export function notServed(key: KeyObject): string | null {
  const type = key.asymmetricKeyType ?? 'unknown';
  if (type === 'rsa' || type === 'rsa-pss') return tooWeak(key);
  if (type === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve ?? 'an unnamed curve';
    return SERVED_CURVES.has(curve) ? null : `an EC key on ${curve}`;
  }
  if (type === 'ed25519' || type === 'ed448') return null;
  return keyOfType(type);
}

/** keyOfType names a key by its type, upper case (`a DSA key`, `an ML-DSA-44 key`). */
function keyOfType(type: string): string {
  const name = type.toUpperCase();
  // an acronym spelled out: "an" before the letters whose name starts with a vowel sound
  return `${/^[AEFHILMNORSX]/.test(name) ? 'an' : 'a'} ${name} key`;
}

/** WEAK_KEY_RULE ends a message about an issuer's key tooWeak named. */
export const WEAK_KEY_RULE =
  `which OpenSSL refuses at its default security level 2 (RSA of at least ${MIN_MODULUS_BITS} bits, 2048 in ` +
  `practice; EC on a curve of at least ${MIN_CURVE_BITS} bits)`;

/** SERVED_KEY_RULE ends a message about a key notServed named. */
export const SERVED_KEY_RULE =
  `which nginx's OpenSSL does not serve (it serves RSA keys of at least ${MIN_MODULUS_BITS} bits, 2048 in ` +
  `practice, EC keys on ${[...SERVED_CURVES.values()].join(', ')}, Ed25519 and Ed448)`;
