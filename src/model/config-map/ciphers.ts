/**
 * checkCiphers: an ssl-ciphers value must name only what OpenSSL knows and select at least one cipher, or
 * `nginx -t` refuses it ("no cipher match") and every sync after it.
 */
import { getCiphers } from 'node:tls';
import { type Checked, show } from '../validate.js';

/** checkCiphers accepts an OpenSSL cipher list: names, `:`, `!`, `+`, `-`, `@STRENGTH` and the like. */
export function checkCiphers(value: unknown): Checked<string> {
  if (typeof value !== 'string' || value.length > 2048 || !/^[A-Za-z0-9:+!@=_.-]{1,2048}$/.test(value)) {
    return { ok: false, message: `${show(value)} is not an OpenSSL cipher list (letters, digits and : + ! @ = _ . -)` };
  }
  // Every element must name something OpenSSL knows, and one must select: a list that matches no
  // cipher passes a character check but fails `nginx -t` ("no cipher match"), blocking every sync.
  let selects = false;
  for (const element of value.split(':')) {
    const negated = /^[!-]/.test(element);
    const body = element.replace(/^[!+-]/, '');
    if (/^@(STRENGTH|SECLEVEL=[0-5])$/.test(body)) continue;
    const unknown = body.split('+').find((part) => !CIPHER_ALIASES.has(part) && !KNOWN_CIPHERS.has(part.toLowerCase()));
    if (body === '' || unknown !== undefined) {
      return {
        ok: false,
        message: `${show(value)}: ${show(unknown ?? element)} is not an OpenSSL cipher or cipher alias`,
      };
    }
    const surelyMatches = body
      .split('+')
      .every((part) => SELECTING_ALIASES.has(part) || KNOWN_CIPHERS.has(part.toLowerCase()));
    if (!negated && !element.startsWith('+') && surelyMatches) selects = true;
  }
  return selects
    ? { ok: true, value }
    : { ok: false, message: `${show(value)} selects no cipher surely (add HIGH, DEFAULT or a cipher name)` };
}

/** OpenSSL's cipher-list aliases (ciphers(1)), which name groups rather than one cipher. */
const CIPHER_ALIASES = new Set(
  (
    'ALL DEFAULT COMPLEMENTOFDEFAULT COMPLEMENTOFALL HIGH MEDIUM LOW eNULL NULL aNULL kRSA aRSA RSA kDHr kDHd kDH ' +
    'kDHE kEDH DH DHE EDH ADH kEECDH kECDHE ECDH ECDHE EECDH AECDH aDSS DSS aECDSA ECDSA TLSv1.2 TLSv1.0 SSLv3 ' +
    'AES128 AES256 AES AESGCM AESCCM AESCCM8 ARIA128 ARIA256 ARIA CAMELLIA128 CAMELLIA256 CAMELLIA CHACHA20 ' +
    '3DES DES RC4 RC2 IDEA SEED MD5 SHA1 SHA SHA256 SHA384 PSK kPSK kECDHEPSK kDHEPSK kRSAPSK aPSK SUITEB128 ' +
    'SUITEB128ONLY SUITEB192 CBC kSRP SRP aSRP EXP EXPORT'
  ).split(' '),
);

/** Aliases that match ciphers in every OpenSSL 3 build (MEDIUM, RC4, EXPORT… may match none). */
const SELECTING_ALIASES = new Set(
  (
    'ALL DEFAULT HIGH AES128 AES256 AES AESGCM CHACHA20 ECDHE EECDH kEECDH kECDHE ECDH aECDSA ECDSA RSA kRSA aRSA ' +
    'DHE EDH kDHE kEDH DH SHA SHA1 SHA256 SHA384 TLSv1.2 TLSv1.0 CAMELLIA ARIA'
  ).split(' '),
);

/** The ciphers this build of OpenSSL offers (a constant table: reading it is no I/O). */
const KNOWN_CIPHERS = new Set(getCiphers());
