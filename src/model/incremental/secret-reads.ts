/**
 * SecretReads: the Secrets the build's plans read, counted plan by plan (src/model/incremental/secrets-read.ts says
 * which Secrets matter and why).
 */
import type { IngressPlan } from '../ingress-plan.js';
import { Tally } from '../tally.js';
import { addedAndRemoved } from './list-diff.js';

/** SecretsRead are the Secrets the last build read, and the namespaces in which every Secret counts. */
export interface SecretsRead {
  /** `namespace/name`, sorted */
  readonly keys: readonly string[];
  /** namespaces of Ingresses held out of the build (their Secrets are not read, yet a renewed one lets them back in) */
  readonly namespaces: readonly string[];
  /**
   * the keys read only as an Ingress's `spec.tls` certificate, outside those namespaces: with the Lua balancer such a
   * certificate is pushed, never named in nginx.conf (a host whose Secret is unusable gets the default certificate
   * from the table too), so a change of these Secrets cannot change the config
   */
  readonly certificatesOnly: readonly string[];
}

/** what one plan reads: Secrets by annotation (files in nginx.conf) and `spec.tls` certificates */
interface PlanReads {
  readonly files: readonly string[];
  readonly certificates: readonly string[];
}

/**
 * SecretReads counts the Secrets the plans read, plan by plan: a build that changed one Ingress changes the counts by
 * that plan's reads, and the lists are made again only when a count came or went (or the held Ingresses changed).
 */
export class SecretReads {
  private plans: readonly IngressPlan[] = [];
  private readonly readsOf = new WeakMap<IngressPlan, PlanReads>();
  private readonly files = new Tally<string, true>();
  private readonly certificates = new Tally<string, true>();
  private last: { readonly key: string; readonly read: SecretsRead } | null = null;

  of(plans: readonly IngressPlan[], defaultSslCertificate: string | undefined, held: readonly string[]): SecretsRead {
    const { added, removed } = addedAndRemoved(this.plans, plans);
    // Added before the removed are taken back, so a key read by both stays counted.
    for (const plan of added) this.count(plan, +1);
    for (const plan of removed) this.count(plan, -1);
    this.plans = plans;
    const key = `${this.files.version}/${this.certificates.version}/${defaultSslCertificate ?? ''}/${held.join(' ')}`;
    if (this.last?.key === key) return this.last.read;
    // Read otherwise: by an annotation (a file in nginx.conf: htpasswd, CA) or as the default certificate (a file).
    const asFile = new Set(this.files.keys());
    if (defaultSslCertificate) asFile.add(defaultSslCertificate);
    const namespaces = new Set(held.map((k) => k.slice(0, k.indexOf('/'))));
    const keys = new Set([...asFile, ...this.certificates.keys()]);
    const certificatesOnly = [...this.certificates.keys()].filter(
      (k) => !asFile.has(k) && !namespaces.has(k.slice(0, k.indexOf('/'))),
    );
    const read = {
      keys: [...keys].sort(),
      namespaces: [...namespaces].sort(),
      certificatesOnly: certificatesOnly.sort(),
    };
    this.last = { key, read };
    return read;
  }

  private count(plan: IngressPlan, sign: 1 | -1): void {
    const reads = this.readsOfPlan(plan);
    for (const k of reads.files)
      if (sign > 0) this.files.add(k, true);
      else this.files.remove(k);
    for (const k of reads.certificates)
      if (sign > 0) this.certificates.add(k, true);
      else this.certificates.remove(k);
  }

  private readsOfPlan(plan: IngressPlan): PlanReads {
    let reads = this.readsOf.get(plan);
    if (reads === undefined) {
      const certificates: string[] = [];
      // The TLS Secrets are checked by the CertificateTable while hosts are settled, not through the plan's reads.
      if (plan.identified)
        for (const step of plan.tls)
          if (step.kind === 'claim' && step.secretName)
            certificates.push(`${plan.identified.namespace}/${step.secretName}`);
      reads = { files: [...plan.reads.secretKeys()], certificates };
      this.readsOf.set(plan, reads);
    }
    return reads;
  }
}
