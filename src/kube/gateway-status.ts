/**
 * The Gateway API status writer: the leader brings `status` of GatewayClasses, Gateways, ListenerSets, the routes in line
 * with what the last build said (GatewayStatus), through the status subresource. Each write is a PUT with the
 * resourceVersion the cache holds; a 409 is left to the next publish, which the newer object's watch event brings.
 * Only what differs is written.
 */
import type { CustomObjectsApi, KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from '../log.js';
import type { GatewayStatus } from '../model/gateway/routes.js';
import { objectKey } from '../model/snapshot.js';
import {
  apiTime,
  type GatewayAddress,
  gatewayClassStatus,
  gatewayStatus,
  listenerSetStatus,
  policyStatus,
  routeStatus,
  sameJson,
} from '../model/gateway/status-merge.js';
import type { ClusterCache } from './cache.js';
import { KIND_INFO, type WatchedKind } from './kinds.js';
import { apiCode, describeApiError } from './leader.js';

/** GatewayStatusWriterOptions are the client, the cache, whose entries are ours, and where addresses come from. */
export interface GatewayStatusWriterOptions {
  readonly custom: CustomObjectsApi;
  readonly cache: ClusterCache;
  /** `--gateway-controller-name`: route `parents[]` entries with it are ours */
  readonly controllerName: string;
  /** the publish addresses (those Ingress status gets), as Gateway addresses */
  readonly addresses: () => Promise<readonly GatewayAddress[]>;
  readonly log: Logger;
  /** the clock, for lastTransitionTime */
  readonly now?: () => Date;
}

/** GatewayPublishResult counts what one publish did; `conflicts` are left to the next one. */
export interface GatewayPublishResult {
  readonly written: number;
  readonly unchanged: number;
  readonly conflicts: number;
}

type Obj = KubernetesObject & { status?: unknown };

/** GatewayStatusWriter writes the Gateway API status the build worked out, where it differs. */
export class GatewayStatusWriter {
  /**
   * `kind namespace/name` → the resourceVersion this writer last replaced: until the watch brings the object back
   * newer, the cache still holds that version, and writing from it again could only conflict (409). One entry per
   * object written, dropped once the cache has moved past it.
   */
  private readonly replaced = new Map<string, string>();

  constructor(private readonly options: GatewayStatusWriterOptions) {}

  /**
   * publish writes the status of every GatewayClass and Gateway in `status`, and of every cached HTTPRoute and GRPCRoute whose
   * entries of ours differ (removing ours from a route that names no Gateway of ours any more). Null (no build
   * yet, or the Gateway API off) writes nothing.
   */
  async publish(status: GatewayStatus | null): Promise<GatewayPublishResult> {
    if (status === null) return { written: 0, unchanged: 0, conflicts: 0 };
    const { cache, controllerName } = this.options;
    const now = apiTime(this.options.now?.() ?? new Date());
    const wanted: { kind: WatchedKind; object: Obj; status: unknown }[] = [];
    const classes = new Map(cache.list<Obj>('GatewayClass').map((c) => [objectKey(c), c]));
    for (const ours of status.gatewayClasses) {
      const object = classes.get(ours.name);
      if (object) wanted.push({ kind: 'GatewayClass', object, status: gatewayClassStatus(object.status, ours, now) });
    }
    if (status.gateways.length > 0) {
      // the publish addresses (maybe an API read) only for Gateways without one of --gateway-addresses
      const addresses = status.gateways.some((g) => g.addresses === undefined) ? await this.options.addresses() : [];
      const gateways = new Map(cache.list<Obj>('Gateway').map((g) => [objectKey(g), g]));
      for (const ours of status.gateways) {
        const object = gateways.get(`${ours.namespace}/${ours.name}`);
        if (object)
          wanted.push({ kind: 'Gateway', object, status: gatewayStatus(object.status, ours, addresses, now) });
      }
    }
    // ListenerSets naming a Gateway of ours (the status is the Gateway controller's: no other writes it)
    const listenerSets = new Map(cache.list<Obj>('ListenerSet').map((l) => [objectKey(l), l]));
    for (const ours of status.listenerSets ?? []) {
      const object = listenerSets.get(`${ours.namespace}/${ours.name}`);
      if (object) wanted.push({ kind: 'ListenerSet', object, status: listenerSetStatus(object.status, ours, now) });
    }
    const byKind = [
      ['HTTPRoute', status.httpRoutes],
      ['GRPCRoute', status.grpcRoutes ?? []],
      ['TLSRoute', status.tlsRoutes ?? []],
      ['TCPRoute', status.tcpRoutes ?? []],
      ['UDPRoute', status.udpRoutes ?? []],
    ] as const;
    for (const [kind, list] of byKind) {
      const routes = new Map(list.map((r) => [`${r.namespace}/${r.name}`, r.parents]));
      for (const object of cache.list<Obj>(kind)) {
        const ours = routes.get(objectKey(object));
        const namespace = object.metadata?.namespace ?? '';
        const desired = routeStatus(object.status, namespace, controllerName, ours, now);
        // A route with no entry of ours, then or now, is none of our business.
        if (ours === undefined && sameJson(desired, object.status ?? { parents: [] })) continue;
        wanted.push({ kind, object, status: desired });
      }
    }
    // BackendTLSPolicies: our ancestors[] entries, removed from a policy no route of ours sends through any more
    const policies = new Map((status.backendTLSPolicies ?? []).map((p) => [`${p.namespace}/${p.name}`, p.ancestors]));
    for (const object of cache.list<Obj>('BackendTLSPolicy')) {
      const ours = policies.get(objectKey(object));
      const desired = policyStatus(object.status, object.metadata?.namespace ?? '', controllerName, ours, now);
      if (ours === undefined && sameJson(desired, object.status ?? { ancestors: [] })) continue;
      wanted.push({ kind: 'BackendTLSPolicy', object, status: desired });
    }
    let written = 0;
    let unchanged = 0;
    let conflicts = 0;
    const failures: string[] = [];
    // objects gone, or none of our business any more, keep no entry
    const current = new Set(wanted.map(({ kind, object }) => `${kind} ${objectKey(object)}`));
    for (const k of this.replaced.keys()) if (!current.has(k)) this.replaced.delete(k);
    for (const { kind, object, status: desired } of wanted) {
      const writtenKey = `${kind} ${objectKey(object)}`;
      const version = object.metadata?.resourceVersion;
      const pending = version !== undefined && this.replaced.get(writtenKey) === version;
      if (!pending) this.replaced.delete(writtenKey);
      if (sameJson(desired, object.status ?? {})) {
        unchanged++;
        continue;
      }
      // our write of this version is on its way back through the watch; the sync it brings judges the new one
      if (pending) continue;
      try {
        if (await this.write(kind, object, desired)) {
          written++;
          if (version !== undefined) this.replaced.set(writtenKey, version);
        }
      } catch (error) {
        if (apiCode(error) === 409) conflicts++;
        else failures.push(`updating the status of ${kind} ${objectKey(object)}: ${describeApiError(error)}`);
      }
    }
    if (conflicts > 0)
      this.options.log.debug({ conflicts }, 'Gateway API status writes conflicted; the next sync retries');
    if (failures.length > 0) throw new Error(failures.join('; '));
    return { written, unchanged, conflicts };
  }

  /** write PUTs one object's /status with the resourceVersion it was read at; false when it is gone (404). */
  private async write(kind: WatchedKind, object: Obj, status: unknown): Promise<boolean> {
    const { custom, log } = this.options;
    const info = KIND_INFO[kind];
    const name = object.metadata?.name ?? '';
    const body = { ...object, apiVersion: `${info.group}/${info.version}`, kind, status };
    try {
      if (info.namespaced) {
        const namespace = object.metadata?.namespace ?? '';
        await custom.replaceNamespacedCustomObjectStatus({ ...path(kind), namespace, name, body });
      } else await custom.replaceClusterCustomObjectStatus({ ...path(kind), name, body });
    } catch (error) {
      if (apiCode(error) === 404) return false;
      throw error;
    }
    log.info({ kind, object: objectKey(object) }, 'Gateway API status updated');
    return true;
  }
}

const path = (kind: WatchedKind) => {
  const info = KIND_INFO[kind];
  return { group: info.group, version: info.version, plural: info.plural };
};
