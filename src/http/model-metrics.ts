/**
 * Metrics about what the controller serves, under ingress-nginx's names (its collectors/controller.go):
 * `nginx_ingress_controller_config_hash`, `_ssl_expire_time_seconds`, `_ssl_certificate_info` and `_orphan_ingress`.
 * Worked out at scrape time from the latest build (certificates and orphans) and from the config nginx serves (the
 * hash), each at most once per change of what it reads.
 */
import { createHash } from 'node:crypto';
import type { Registry } from 'prom-client';
import type { NginxConfigSet } from '../../machines/events.js';
import { certificateFacts, servedCertificates, type CertificateFacts } from '../model/certificate-info.js';
import type { NginxModel } from '../model/nginx-model.js';
import { orphanIngresses, type Orphanity } from '../model/orphans.js';
import type { Snapshot } from '../model/snapshot.js';
import { servedIngresses } from '../kube/status.js';
import { registerComputed, type Sample } from './computed-metric.js';

/** ModelMetricsOptions: the controller's class (ingress-nginx's `class` label), what nginx serves, who leads. */
export interface ModelMetricsOptions {
  readonly controllerClass: string;
  /** the config set nginx serves now (the nginx actor's `applied`), null before the first */
  readonly applied: () => NginxConfigSet | null;
  readonly isLeader: () => boolean;
}

/**
 * configHash is a number for a config set, as ingress-nginx's uint64 `config_hash`: the first 48 bits of a SHA-256
 * of the text and the files, so that it is exact as a float.
 */
export function configHash(set: NginxConfigSet): number {
  const hash = createHash('sha256').update(set.config);
  for (const file of set.files) hash.update(`\0${file.file}\0${file.pem ?? ''}`);
  return hash.digest().readUIntBE(0, 6);
}

/** ModelMetrics registers the metrics and takes each sync's snapshot and model. */
export class ModelMetrics {
  private latest: { readonly snapshot: Snapshot; readonly model: NginxModel } | null = null;
  private orphans: { readonly from: Snapshot; readonly list: readonly Orphanity[] } | null = null;
  private readonly hashes = new WeakMap<NginxConfigSet, number>();
  // By the PEM text: a certificate is parsed once while it is served.
  private facts = new Map<string, CertificateFacts | null>();
  private readonly controllerClass: string;

  constructor(registry: Registry, options: ModelMetricsOptions) {
    this.controllerClass = options.controllerClass;
    registerComputed(registry, {
      name: 'nginx_ingress_controller_config_hash',
      help: 'Running configuration hash actually running',
      type: 'gauge',
      collect: () => {
        const applied = options.applied();
        if (!applied) return [{ value: 0 }];
        let hash = this.hashes.get(applied);
        if (hash === undefined) this.hashes.set(applied, (hash = configHash(applied)));
        return [{ value: hash }];
      },
    });
    registerComputed(registry, {
      name: 'nginx_ingress_controller_ssl_expire_time_seconds',
      help:
        'Number of seconds since 1970 to the SSL Certificate expire. An example to check if this certificate will ' +
        'expire in 10 days is: "nginx_ingress_controller_ssl_expire_time_seconds < (time() + (10 * 24 * 3600))"',
      type: 'gauge',
      // Only the leader tells, as ingress-nginx: one series per certificate, however many replicas.
      collect: () =>
        options.isLeader() ? this.certificates().map(({ labels, facts }) => ({ labels, value: facts.expireTime })) : [],
    });
    registerComputed(registry, {
      name: 'nginx_ingress_controller_ssl_certificate_info',
      help: 'Hold all labels associated to a certificate',
      type: 'gauge',
      collect: () =>
        this.certificates().map(({ labels, facts }) => ({
          labels: {
            ...labels,
            issuer_organization: facts.issuerOrganization,
            issuer_common_name: facts.issuerCommonName,
            serial_number: facts.serialNumber,
            public_key_algorithm: facts.publicKeyAlgorithm,
          },
          value: 1,
        })),
    });
    registerComputed(registry, {
      name: 'nginx_ingress_controller_orphan_ingress',
      help:
        "Gauge reporting status of ingress orphanity, 1 indicates orphaned ingress. 'namespace' is the string used " +
        "to identify namespace of ingress, 'ingress' for ingress name and 'type' for 'no-service' or 'no-endpoint' " +
        'of orphanity',
      type: 'gauge',
      collect: () =>
        this.orphanList().flatMap((o): Sample[] => [
          { labels: { namespace: o.namespace, ingress: o.ingress, type: 'no-service' }, value: o.noService ? 1 : 0 },
          { labels: { namespace: o.namespace, ingress: o.ingress, type: 'no-endpoint' }, value: o.noEndpoint ? 1 : 0 },
        ]),
    });
  }

  /** observe takes a sync's snapshot and the whole model it built (before the Lua balancer's tables are split off). */
  observe(snapshot: Snapshot, model: NginxModel): void {
    this.latest = { snapshot, model };
  }

  private certificates(): { labels: Record<string, string>; facts: CertificateFacts }[] {
    if (!this.latest) return [];
    const facts = new Map<string, CertificateFacts | null>();
    const found: { labels: Record<string, string>; facts: CertificateFacts }[] = [];
    for (const served of servedCertificates(this.latest.model)) {
      const pem = served.certificate.pem;
      const known = facts.has(pem) ? facts.get(pem) : this.facts.get(pem);
      const parsed = known === undefined ? certificateFacts(pem) : known;
      facts.set(pem, parsed);
      if (!parsed) continue;
      found.push({
        labels: {
          namespace: served.namespace,
          class: this.controllerClass,
          host: served.host,
          secret_name: served.secretName,
          identifier: parsed.identifier,
        },
        facts: parsed,
      });
    }
    this.facts = facts;
    return found;
  }

  private orphanList(): readonly Orphanity[] {
    if (!this.latest) return [];
    const { snapshot, model } = this.latest;
    if (this.orphans?.from !== snapshot)
      this.orphans = { from: snapshot, list: orphanIngresses(snapshot, servedIngresses(model)) };
    return this.orphans.list;
  }
}
