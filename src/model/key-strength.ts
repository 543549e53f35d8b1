/**
 * What OpenSSL 3 at security level 2 (Debian's default) refuses to serve: keys of under 112 bits of
 * security ("ee key too small", "ca key too small"). With rendered certificates `nginx -t` judges them;
 * a certificate pushed to the Lua balancer is loaded only at the handshake, so the model judges it first.
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
 * tooWeak says what OpenSSL at security level 2 refuses in `key` (`a 1024-bit RSA key`), or null when it does
 * not: RSA and DSA by modulus, EC by its named curve's size (which the curve names carry: prime192v1,
 * secp224r1, brainpoolP256r1). Ed25519 and Ed448 are strong enough by construction.
 */
export function tooWeak(key: KeyObject): string | null {
  const details = key.asymmetricKeyDetails ?? {};
  const type = key.asymmetricKeyType;
  if (type === 'rsa' || type === 'rsa-pss' || type === 'dsa') {
    const n = details.modulusLength;
    return n !== undefined && n < MIN_MODULUS_BITS ? `a ${n}-bit ${type.toUpperCase()} key` : null;
  }
  if (type === 'ec') {
    const size = Number(/(\d+)/.exec(details.namedCurve ?? '')?.[1]);
    return size < MIN_CURVE_BITS ? `an EC key on ${details.namedCurve}` : null;
  }
  return null;
}

/** WEAK_KEY_RULE ends a message about a key tooWeak named. */
export const WEAK_KEY_RULE =
  `which OpenSSL refuses at its default security level 2 (RSA of at least ${MIN_MODULUS_BITS} bits, 2048 in ` +
  `practice; EC on a curve of at least ${MIN_CURVE_BITS} bits)`;
