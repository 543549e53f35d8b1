/**
 * The Secrets our Gateways name: each listener's `tls.certificateRefs` (HTTPS, TLS Terminate) and
 * `spec.tls.backend.clientCertificateRef`. The Secret watcher reports only the changes of Secrets the last build read
 * (src/model/incremental/secrets-read.ts), so a renewed or newly created listener certificate must be among them, or
 * nginx would keep serving the old one (or none). Every Gateway's names count, whatever its verdict: a Secret created
 * after its Gateway is what makes that listener resolve. The keys only select watch events. Pure.
 */
import type { KubeObject } from '../snapshot.js';

const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const rec = (v: unknown): Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** gatewaySecretKeys lists `namespace/name` of every core Secret the Gateways name, sorted. */
export function gatewaySecretKeys(gateways: readonly KubeObject[]): string[] {
  const keys = new Set<string>();
  for (const gateway of gateways) {
    const namespace = text(rec(gateway.metadata).namespace);
    if (namespace === undefined) continue;
    const spec = rec((gateway as { spec?: unknown }).spec);
    const add = (raw: unknown) => {
      const ref = rec(raw);
      const name = text(ref.name);
      if (name === undefined || (text(ref.group) ?? '') !== '' || (text(ref.kind) ?? 'Secret') !== 'Secret') return;
      keys.add(`${text(ref.namespace) ?? namespace}/${name}`);
    };
    for (const listener of list(spec.listeners))
      for (const ref of list(rec(rec(listener).tls).certificateRefs)) add(ref);
    add(rec(rec(spec.tls).backend).clientCertificateRef);
  }
  return [...keys].sort();
}
