/**
 * Orphaned Ingresses, for ingress-nginx's `nginx_ingress_controller_orphan_ingress{namespace,ingress,type}`: an
 * Ingress whose rule paths name a Service that does not exist (`no-service`) or one without ready endpoints
 * (`no-endpoint`). Pure: it resolves the rule backends against the snapshot with the build's own resolver.
 */
import { BuiltUpstreams, compare, UpstreamTable } from './backends.js';
import { Lookups, type Reads } from './lookups.js';
import type { Snapshot } from './snapshot.js';

/** Orphanity is one Ingress's two gauges. */
export interface Orphanity {
  readonly namespace: string;
  readonly ingress: string;
  /** some rule path names a Service that is not there */
  readonly noService: boolean;
  /** some rule path names a Service (that is there) whose port has no ready endpoint */
  readonly noEndpoint: boolean;
}

/**
 * orphanIngresses reports each Ingress of `served` (`namespace/name`, those the controller serves) that has a Service
 * backend in its rules, sorted. As ingress-nginx, `spec.defaultBackend` and resource backends do not count; unlike its
 * gauge, which the last path of an Ingress sets, one orphaned path marks the Ingress (and a deleted Ingress has no
 * series left).
 */
export function orphanIngresses(snapshot: Snapshot, served: ReadonlySet<string>): Orphanity[] {
  const lookups = new Lookups(snapshot);
  const reads: Reads = {
    service: (key) => lookups.services.get(key),
    slices: (key) => lookups.slices.get(key) ?? [],
    secret: (key) => lookups.secrets.get(key),
  };
  const table = new UpstreamTable(reads, new BuiltUpstreams());
  const ignore = () => undefined;
  const found: Orphanity[] = [];
  for (const ing of snapshot.ingresses) {
    const namespace = ing.metadata?.namespace ?? '';
    const name = ing.metadata?.name ?? '';
    if (!served.has(`${namespace}/${name}`)) continue;
    let backends = 0;
    let noService = false;
    let noEndpoint = false;
    for (const rule of ing.spec?.rules ?? [])
      for (const path of rule.http?.paths ?? []) {
        if (!path.backend?.service) continue;
        backends++;
        if (!lookups.services.has(`${namespace}/${path.backend.service.name}`)) {
          noService = true;
          continue;
        }
        const resolved = table.resolve(namespace, path.backend, '', ignore);
        if (resolved.upstream === null || table.endpointCount(resolved.upstream) === 0) noEndpoint = true;
      }
    if (backends > 0) found.push({ namespace, ingress: name, noService, noEndpoint });
  }
  return found.sort((a, b) => compare(a.namespace, b.namespace) || compare(a.ingress, b.ingress));
}
