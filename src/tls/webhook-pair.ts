/**
 * The admission webhook's own certificate (`--validating-webhook-secret`): what the shared Secret must hold to be
 * served as it is, and a new CA and serving pair when it does not. No I/O but certificate generation: the Secret is
 * read and written by src/kube/webhook-cert.ts.
 *
 * The Secret (type kubernetes.io/tls, cert-manager's layout plus the CA's key) holds `ca.crt` (the bundle the
 * ValidatingWebhookConfiguration's caBundle gets: the current CA first, and during a CA rollover the previous one,
 * so replicas still serving a leaf of the old CA are trusted until they read the new pair), `ca.key`, `tls.crt` and
 * `tls.key`. A renewal keeps the CA while it outlives the new leaf, so the caBundle does not change.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { issueCertificate } from './issue.js';

/** CA_DAYS and LEAF_DAYS: a CA for ten years, a serving certificate for one (renewed 30 days before its end). */
export const CA_DAYS = 3650;
export const LEAF_DAYS = 365;
/** RENEW_BEFORE_MS: a pair this close to its end (or its CA's) is renewed, as cert-manager's renewBefore. */
export const RENEW_BEFORE_MS = 30 * 86_400_000;

/** SecretData is a Secret's `data` as the API gives it: base64 values. */
export type SecretData = Readonly<Record<string, string>>;

/** ServingPair is what the webhook serves and what its callers must trust: PEM text. */
export interface ServingPair {
  /** the CA bundle for caBundle (one or two CA certificates) */
  readonly caPem: string;
  readonly certPem: string;
  readonly keyPem: string;
  /** when the serving certificate ends, ms since the epoch */
  readonly notAfter: number;
}

/** Wanted is what the pair must be valid for, and how early it is renewed. */
export interface Wanted {
  readonly dnsNames: readonly string[];
  readonly renewBeforeMs: number;
  readonly now: number;
}

/** PairVerdict: the Secret's pair can be served as it is, or why not. */
export type PairVerdict =
  | { readonly ok: true; readonly pair: ServingPair }
  | { readonly ok: false; readonly why: string };

const PEM_CERT = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

const text = (data: SecretData, key: string): string | null => {
  const value = data[key];
  return typeof value === 'string' && value !== '' ? Buffer.from(value, 'base64').toString('utf8') : null;
};

/** certificates reads every certificate of a PEM bundle; throws on a bad one. */
function certificates(pem: string): X509Certificate[] {
  return (pem.match(PEM_CERT) ?? []).map((block) => new X509Certificate(block));
}

/** dnsNamesOf lists a certificate's DNS subject alternative names. */
export function dnsNamesOf(cert: X509Certificate): string[] {
  return (cert.subjectAltName ?? '')
    .split(', ')
    .filter((n) => n.startsWith('DNS:'))
    .map((n) => n.slice(4));
}

/**
 * judgePair says whether a Secret's data can be served as it is: a CA bundle, a serving certificate one of its
 * CAs signed, its key, every wanted DNS name, and neither it nor its CA within `renewBeforeMs` of its end.
 */
export function judgePair(data: SecretData, wanted: Wanted): PairVerdict {
  const caPem = text(data, 'ca.crt');
  const certPem = text(data, 'tls.crt');
  const keyPem = text(data, 'tls.key');
  if (!caPem || !certPem || !keyPem) return { ok: false, why: 'it lacks ca.crt, tls.crt or tls.key' };
  try {
    const [leaf] = certificates(certPem);
    if (!leaf) return { ok: false, why: 'tls.crt holds no certificate' };
    if (!leaf.checkPrivateKey(createPrivateKey(keyPem))) return { ok: false, why: 'tls.key is not tls.crt’s key' };
    const ca = certificates(caPem).find((c) => leaf.checkIssued(c) && leaf.verify(c.publicKey));
    if (!ca) return { ok: false, why: 'no CA of ca.crt signed tls.crt' };
    const names = dnsNamesOf(leaf);
    const missing = wanted.dnsNames.filter((n) => !names.includes(n));
    if (missing.length > 0) return { ok: false, why: `tls.crt is not valid for ${missing.join(', ')}` };
    const notAfter = Math.min(Date.parse(leaf.validTo), Date.parse(ca.validTo));
    if (Date.parse(leaf.validFrom) > wanted.now) return { ok: false, why: 'tls.crt is not valid yet' };
    if (notAfter - wanted.now <= wanted.renewBeforeMs)
      return { ok: false, why: `it ends ${new Date(notAfter).toISOString()}, within the renewal window` };
    return { ok: true, pair: { caPem, certPem, keyPem, notAfter: Date.parse(leaf.validTo) } };
  } catch (error) {
    return { ok: false, why: `it does not parse: ${error instanceof Error ? error.message : String(error)}` };
  }
}

/** reusableCa is the Secret's CA with its key when it outlives a new leaf, else null. */
function reusableCa(data: SecretData, now: number): { certPem: string; keyPem: string } | null {
  const caPem = text(data, 'ca.crt');
  const caKey = text(data, 'ca.key');
  if (!caPem || !caKey) return null;
  try {
    const [ca] = certificates(caPem);
    if (!ca?.ca || !ca.checkPrivateKey(createPrivateKey(caKey))) return null;
    if (Date.parse(ca.validTo) - now <= (LEAF_DAYS + 1) * 86_400_000) return null;
    return { certPem: ca.toString(), keyPem: caKey };
  } catch {
    return null;
  }
}

/** stillTrusted is the CA of the old bundle that signed the old leaf while it has not ended: kept through a rollover. */
function stillTrusted(data: SecretData, now: number): string | null {
  const caPem = text(data, 'ca.crt');
  const certPem = text(data, 'tls.crt');
  if (!caPem || !certPem) return null;
  try {
    const [leaf] = certificates(certPem);
    const ca = leaf && certificates(caPem).find((c) => leaf.checkIssued(c) && leaf.verify(c.publicKey));
    return ca && Date.parse(ca.validTo) > now ? ca.toString() : null;
  } catch {
    return null;
  }
}

/**
 * newPairData makes the Secret's next data for `dnsNames`: a serving certificate signed by the old data's CA when
 * that CA (with its key) outlives it, else by a new CA whose bundle keeps the old CA while it is valid.
 */
export async function newPairData(
  old: SecretData,
  dnsNames: readonly string[],
  now: number,
  leafDays = LEAF_DAYS,
): Promise<Record<string, string>> {
  let ca = reusableCa(old, now);
  let bundle = ca?.certPem;
  if (!ca) {
    ca = await issueCertificate({ commonName: 'ingress-actors-webhook-ca', isCa: true, days: CA_DAYS });
    const previous = stillTrusted(old, now);
    bundle = previous ? `${ca.certPem}${previous}\n` : ca.certPem;
  }
  const leaf = await issueCertificate({ commonName: dnsNames[0]!, dnsNames, issuer: ca, days: leafDays });
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  return {
    'ca.crt': b64(bundle!),
    'ca.key': b64(ca.keyPem),
    'tls.crt': b64(leaf.certPem),
    'tls.key': b64(leaf.keyPem),
  };
}

/** serviceDnsNames are the names the API server and pods call a Service by: NAME.NS.svc first (its TLS server name). */
export function serviceDnsNames(namespace: string, name: string): string[] {
  return [`${name}.${namespace}.svc`, `${name}.${namespace}.svc.cluster.local`];
}
