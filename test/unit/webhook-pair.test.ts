import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { issueCertificate } from '../../src/tls/issue.js';
import { judgePair, newPairData, RENEW_BEFORE_MS, serviceDnsNames } from '../../src/tls/webhook-pair.js';

const NAMES = serviceDnsNames('ingress-actors', 'ingress-actors-admission');
const wanted = (now = Date.now()) => ({ dnsNames: NAMES, renewBeforeMs: RENEW_BEFORE_MS, now });
const b64 = (s: string) => Buffer.from(s).toString('base64');
const text = (data: Record<string, string>, key: string) => Buffer.from(data[key]!, 'base64').toString('utf8');
const certsOf = (pem: string) =>
  (pem.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? []).map((c) => new X509Certificate(c));

describe('judgePair', () => {
  it('serves a fresh pair; names what is wrong with others', async () => {
    const data = await newPairData({}, NAMES, Date.now());
    const verdict = judgePair(data, wanted());
    expect(verdict.ok).toBe(true);
    const other = await newPairData({}, NAMES, Date.now());
    expect(judgePair({ ...data, 'tls.key': other['tls.key']! }, wanted())).toEqual({
      ok: false,
      why: 'tls.key is not tls.crt’s key',
    });
    expect(judgePair({ ...data, 'ca.crt': other['ca.crt']! }, wanted())).toEqual({
      ok: false,
      why: 'no CA of ca.crt signed tls.crt',
    });
    expect(judgePair({ 'tls.crt': data['tls.crt']! }, wanted())).toEqual({
      ok: false,
      why: 'it lacks ca.crt, tls.crt or tls.key',
    });
    // A year from now it is inside the renewal window.
    expect(judgePair(data, wanted(Date.now() + 340 * 86_400_000))).toMatchObject({ ok: false });
  });
});

describe('newPairData', () => {
  it('keeps a CA that outlives the new certificate, so the caBundle does not change', async () => {
    const first = await newPairData({}, NAMES, Date.now(), 1);
    const next = await newPairData(first, NAMES, Date.now());
    expect(next['ca.crt']).toBe(first['ca.crt']);
    expect(next['tls.crt']).not.toBe(first['tls.crt']);
    expect(judgePair(next, wanted()).ok).toBe(true);
  });

  it('a CA near its end: a new CA, the bundle keeping the old one while replicas still serve its certificate', async () => {
    const oldCa = await issueCertificate({ commonName: 'old-ca', isCa: true, days: 60 });
    const oldLeaf = await issueCertificate({ commonName: NAMES[0]!, dnsNames: NAMES, issuer: oldCa, days: 50 });
    const old = {
      'ca.crt': b64(oldCa.certPem),
      'ca.key': b64(oldCa.keyPem),
      'tls.crt': b64(oldLeaf.certPem),
      'tls.key': b64(oldLeaf.keyPem),
    };
    const next = await newPairData(old, NAMES, Date.now());
    const bundle = certsOf(text(next, 'ca.crt'));
    expect(bundle).toHaveLength(2);
    expect(bundle[0]!.subject).toBe('CN=ingress-actors-webhook-ca');
    expect(bundle[1]!.toString()).toBe(new X509Certificate(oldCa.certPem).toString());
    // The old certificate (still served by a replica that has not read the Secret yet) is trusted by the new bundle.
    expect(judgePair({ ...old, 'ca.crt': next['ca.crt']! }, { ...wanted(), renewBeforeMs: 0 }).ok).toBe(true);
    expect(judgePair(next, wanted()).ok).toBe(true);
  });
});
