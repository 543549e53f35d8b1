import { certificateCovers, checkTlsPair, type TlsPair } from './certificate.js';
import type { Certificate, Problem } from './nginx-model.js';
import type { Lookups } from './lookups.js';
import type { Secret } from './snapshot.js';
import { compare, type Report } from './backends.js';
import { checkObjectName } from './validate.js';

/** The file the controller's fallback certificate lives in; the caller fills it when pem is null. */
export const DEFAULT_CERTIFICATE_FILE = 'certificates/default.pem';

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function secretValue(secret: Secret, key: string): string | undefined {
  const plain = secret.stringData?.[key];
  if (typeof plain === 'string') return plain;
  const encoded = secret.data?.[key];
  if (typeof encoded !== 'string' || !BASE64.test(encoded)) return undefined;
  return Buffer.from(encoded, 'base64').toString('utf8');
}

type Checked = { pair: TlsPair; certificate: Certificate } | { error: string };

/**
 * checkTlsSecret is the one judgement of a TLS Secret, for Ingress TLS and Gateway listeners alike: its type, and
 * tls.crt and tls.key a PEM chain and the leaf's key (with `strongKeys`, one OpenSSL serves, see key-strength.ts).
 * `key` is `namespace/name`. Pure: node:crypto only parses.
 */
export function checkTlsSecret(key: string, secret: Secret, strongKeys: boolean): Checked {
  if (secret.type !== undefined && secret.type !== 'kubernetes.io/tls' && secret.type !== 'Opaque') {
    return { error: `Secret ${key} is of type ${secret.type}, not kubernetes.io/tls` };
  }
  const cert = secretValue(secret, 'tls.crt');
  const key_ = secretValue(secret, 'tls.key');
  if (cert === undefined || key_ === undefined) return { error: `Secret ${key} has no valid tls.crt and tls.key` };
  const pair = checkTlsPair(cert, key_, strongKeys);
  if (!pair.ok) return { error: `Secret ${key}: ${pair.message}` };
  const [namespace, name] = key.split('/');
  const certificate = { id: key, file: `certificates/${namespace}_${name}.pem`, pem: pair.value.pem };
  return { pair: pair.value, certificate };
}

/**
 * CheckedSecrets remembers each TLS Secret's verdict by the Secret object itself: parsing a
 * certificate is the dearest part of a build, and an unchanged Secret is the same object.
 */
export type CheckedSecrets = WeakMap<Secret, Checked>;

/** CertificateTable checks TLS Secrets once each and hands out the files nginx reads them from. */
export class CertificateTable {
  private readonly checked = new Map<string, Checked>();
  readonly defaultCertificate: Certificate;

  constructor(
    private readonly lookups: Lookups,
    defaultSecret: string | undefined,
    problems: Problem[],
    private readonly verdicts: CheckedSecrets = new WeakMap(),
    /** refuse keys OpenSSL would refuse at the handshake: with the Lua balancer, nginx -t never sees them */
    private readonly strongKeys = false,
  ) {
    this.defaultCertificate = this.chooseDefault(defaultSecret, problems);
  }

  /**
   * forHost returns the certificate for `host` from Secret `secretName` in `namespace`, or the
   * default one (with a problem) when the Secret is missing, malformed or not valid for the host.
   */
  forHost(namespace: string, secretName: string | undefined, host: string, field: string, report: Report): Certificate {
    if (!secretName) return this.defaultCertificate;
    const name = checkObjectName(secretName);
    if (!name.ok) {
      report(`${field}.secretName`, `${name.message}; using the default certificate`);
      return this.defaultCertificate;
    }
    const found = this.check(`${namespace}/${name.value}`);
    if ('error' in found) {
      report(`${field}.secretName`, `${found.error}; using the default certificate`);
      return this.defaultCertificate;
    }
    if (!certificateCovers(found.pair.leaf, host)) {
      report(
        `${field}.secretName`,
        `the certificate in Secret ${namespace}/${name.value} is not ` +
          `valid for host ${host}; using the default certificate`,
      );
      return this.defaultCertificate;
    }
    return found.certificate;
  }

  /**
   * anyHost is the certificate of Secret `namespace/name`, checked as forHost checks it but for no host (a Gateway
   * HTTPS listener serves its certificateRefs for all its hostnames), or the reason it cannot be used.
   */
  anyHost(namespace: string, name: string): Certificate | { readonly error: string } {
    const found = this.check(`${namespace}/${name}`);
    return 'error' in found ? { error: found.error } : found.certificate;
  }

  /** certificates lists every certificate file nginx.conf names, the default one first, given those the hosts use. */
  certificates(used: Iterable<Certificate>): Certificate[] {
    const named = [...used].filter((c) => c.file !== this.defaultCertificate.file);
    return [this.defaultCertificate, ...named.sort((a, b) => compare(a.id, b.id))];
  }

  private chooseDefault(defaultSecret: string | undefined, problems: Problem[]): Certificate {
    const selfSigned: Certificate = { id: 'default', file: DEFAULT_CERTIFICATE_FILE, pem: null };
    if (!defaultSecret) return selfSigned;
    const found = this.check(defaultSecret);
    if ('error' in found) {
      const [namespace = '', name = ''] = defaultSecret.split('/');
      problems.push({
        kind: 'Secret',
        namespace,
        name,
        field: '--default-ssl-certificate',
        message: `${found.error}; using a self-signed certificate`,
      });
      return selfSigned;
    }
    return { id: found.certificate.id, file: DEFAULT_CERTIFICATE_FILE, pem: found.certificate.pem };
  }

  private check(key: string): Checked {
    const cached = this.checked.get(key);
    if (cached) return cached;
    const result = this.checkSecret(key);
    this.checked.set(key, result);
    return result;
  }

  private checkSecret(key: string): Checked {
    const secret = this.lookups.secrets.get(key);
    if (!secret) return { error: `Secret ${key} not found` };
    let verdict = this.verdicts.get(secret);
    if (!verdict) this.verdicts.set(secret, (verdict = checkTlsSecret(key, secret, this.strongKeys)));
    return verdict;
  }
}
