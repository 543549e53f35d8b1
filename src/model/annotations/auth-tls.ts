import { X509Certificate } from 'node:crypto';
import { checkHttpUrl, type Checked } from '../validate.js';
import { secretData, secretRef } from './auth.js';
import { intIn, noteWithout, oneOf, read, readBool } from './read.js';
import type { AnnotationGroup, AuthTlsAnnotations } from './types.js';

const BEGIN = '-----BEGIN CERTIFICATE-----';
const END = '-----END CERTIFICATE-----';
const isBase64OrSpace = (c: string) => /^[A-Za-z0-9+/=\s]$/.test(c);

/**
 * pemBlocks splits text into its PEM certificate blocks, or null when anything else is in it
 * (blank space between blocks aside). One pass with indexOf: linear, unlike a `g` regex of the
 * same shape, which rescans the body from each BEGIN it meets.
 */
function pemBlocks(text: string): string[] | null {
  const blocks: string[] = [];
  let at = 0;
  for (;;) {
    const begin = text.indexOf(BEGIN, at);
    if (text.slice(at, begin === -1 ? text.length : begin).trim() !== '') return null;
    if (begin === -1) return blocks;
    const end = text.indexOf(END, begin + BEGIN.length);
    if (end === -1) return null;
    const body = text.slice(begin + BEGIN.length, end);
    if (body.length === 0 || ![...body].every(isBase64OrSpace)) return null;
    blocks.push(text.slice(begin, end + END.length));
    at = end + END.length;
  }
}

/**
 * checkCaBundle accepts PEM certificates (at least one, each one parsing), and nothing else; they are written as found.
 */
export function checkCaBundle(text: string): Checked<string> {
  if (text.length > 1 << 20) return { ok: false, message: 'is over 1 MiB' };
  const blocks = pemBlocks(text) ?? [];
  if (blocks.length === 0) return { ok: false, message: 'is not PEM certificates only' };
  for (const [i, block] of blocks.entries()) {
    try {
      new X509Certificate(block);
    } catch {
      return { ok: false, message: `certificate ${i + 1} does not parse` };
    }
  }
  return { ok: true, value: `${blocks.join('\n')}\n` };
}

const VERIFY = ['on', 'off', 'optional', 'optional_no_ca'] as const;
const NEEDS_SECRET = [
  'auth-tls-verify-client',
  'auth-tls-verify-depth',
  'auth-tls-error-page',
  'auth-tls-pass-certificate-to-upstream',
];

/**
 * authTlsGroup is client certificate authentication: the host's TLS handshake asks for a client
 * certificate signed by the CA in auth-tls-secret (`ca.crt`), and with verification `on` a request
 * without a valid one is refused, over HTTPS by nginx and over plain HTTP by the location (403).
 */
export const authTlsGroup: AnnotationGroup<'authTls'> = {
  name: 'AuthTLS',
  field: 'authTls',
  keys: [
    {
      key: 'auth-tls-secret',
      risk: 'Medium',
      scope: 'location',
      onInvalid: 'deny',
      support: 'supported',
      doc:
        'Secret `name` or `namespace/name` whose `ca.crt` signs the client certificates; set on the host (the ' +
        'oldest Ingress on it wins), written 0600',
    },
    {
      key: 'auth-tls-verify-client',
      risk: 'Medium',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'ssl_verify_client: on (default: no valid certificate, no answer), optional, optional_no_ca or off',
    },
    {
      key: 'auth-tls-verify-depth',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'ssl_verify_depth (default 1)',
    },
    {
      key: 'auth-tls-error-page',
      risk: 'High',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'where a request with a missing or bad client certificate is redirected instead (an http(s) URL)',
    },
    {
      key: 'auth-tls-pass-certificate-to-upstream',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'send the client certificate upstream in `ssl-client-cert` (the verify result and DNs are always sent)',
    },
  ],
  parse(input): AuthTlsAnnotations | null {
    const ref = read(input, 'auth-tls-secret', (v) => secretRef(input, v));
    const verifyClient = read(input, 'auth-tls-verify-client', oneOf(VERIFY, true)) ?? 'on';
    const depth = read(input, 'auth-tls-verify-depth', intIn(1, 100)) ?? 1;
    const errorPage = read(input, 'auth-tls-error-page', checkHttpUrl) ?? null;
    const passCertificate = readBool(input, 'auth-tls-pass-certificate-to-upstream') ?? false;
    if (ref === undefined) {
      noteWithout(input, NEEDS_SECRET, 'auth-tls-secret');
      return null;
    }
    const secretId = `${ref.namespace}/${ref.name}`;
    const secret = input.secret(ref.namespace, ref.name);
    if (!secret) {
      input.invalid('auth-tls-secret', `Secret ${secretId} not found`);
      return null;
    }
    const ca = secretData(secret).get('ca.crt');
    const checked = ca === undefined ? ({ ok: false, message: "has no key 'ca.crt'" } as const) : checkCaBundle(ca);
    if (!checked.ok) {
      input.invalid('auth-tls-secret', `Secret ${secretId} ${checked.message}`);
      return null;
    }
    return { secretId, caPem: checked.value, verifyClient, depth, errorPage, passCertificate };
  },
};
