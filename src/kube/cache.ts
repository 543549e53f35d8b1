import type { KubeObject, Snapshot } from '../model/snapshot.js';
import type { WatchedKind } from './kinds.js';

const key = (obj: KubeObject) => `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;

/**
 * ClusterCache holds the latest object of every watched kind, as the watchers see them, and
 * hands buildModel a Snapshot of it. It is the one place the watchers write and the sync reads.
 */
export class ClusterCache {
  private readonly objects = new Map<WatchedKind, Map<string, KubeObject>>();
  /** each kind's list as last handed out, until that kind changes */
  private readonly lists = new Map<WatchedKind, readonly KubeObject[]>();

  /**
   * upsert stores an added or updated object; false when it is the version already held. The
   * held object stays then (a relist brings equal copies): the incremental build reuses work
   * for as long as an object is the same object.
   */
  upsert(kind: WatchedKind, obj: KubeObject): boolean {
    const byKey = this.kind(kind);
    const old = byKey.get(key(obj));
    const changed =
      !old || old.metadata?.resourceVersion !== obj.metadata?.resourceVersion || !obj.metadata?.resourceVersion;
    if (!changed) return false;
    byKey.set(key(obj), obj);
    this.lists.delete(kind);
    return true;
  }

  /** remove forgets a deleted object; false when it was not held. */
  remove(kind: WatchedKind, obj: KubeObject): boolean {
    const removed = this.kind(kind).delete(key(obj));
    if (removed) this.lists.delete(kind);
    return removed;
  }

  /**
   * list returns every object held of a kind; the same array while the kind is unchanged, never one that changes later.
   */
  list<T extends KubeObject>(kind: WatchedKind): readonly T[] {
    let list = this.lists.get(kind);
    if (!list) this.lists.set(kind, (list = Object.freeze([...this.kind(kind).values()])));
    return list as readonly T[];
  }

  /** get is the object of `kind` held as `namespace/name` (cluster-scoped: `/name`), if any. */
  get<T extends KubeObject>(kind: WatchedKind, key: string): T | undefined {
    return this.kind(kind).get(key) as T | undefined;
  }

  /** snapshot is what buildModel reads: a fresh array per kind, so later watch events cannot change it. */
  snapshot(): Snapshot {
    return {
      ingresses: this.list('Ingress'),
      ingressClasses: this.list('IngressClass'),
      services: this.list('Service'),
      endpointSlices: this.list('EndpointSlice'),
      secrets: this.list('Secret'),
      configMaps: this.list('ConfigMap'),
      gatewayClasses: this.list('GatewayClass'),
      gateways: this.list('Gateway'),
      httpRoutes: this.list('HTTPRoute'),
      grpcRoutes: this.list('GRPCRoute'),
      tlsRoutes: this.list('TLSRoute'),
      tcpRoutes: this.list('TCPRoute'),
      udpRoutes: this.list('UDPRoute'),
      listenerSets: this.list('ListenerSet'),
      referenceGrants: this.list('ReferenceGrant'),
      backendTLSPolicies: this.list('BackendTLSPolicy'),
      namespaces: this.list('Namespace'),
    };
  }

  /**
   * changedSince lists the keys (`namespace/name`) among `among` whose object of `kind` the cache
   * holds differently from `before` (an earlier list of that kind): changed, added or removed.
   * `among.namespaces` count whole (every key in them).
   */
  changedSince(
    kind: WatchedKind,
    before: readonly KubeObject[],
    among: { readonly keys: readonly string[]; readonly namespaces: readonly string[] },
  ): string[] {
    const now = this.list(kind);
    if (now === before) return [];
    const was = new Map(before.map((o) => [key(o), o]));
    const byKey = this.kind(kind);
    const changed = new Set(among.keys.filter((k) => byKey.get(k) !== was.get(k)));
    if (among.namespaces.length > 0) {
      const namespaces = new Set(among.namespaces);
      const inNamespace = (k: string) => namespaces.has(k.slice(0, k.indexOf('/')));
      for (const [k, o] of byKey) if (inNamespace(k) && was.get(k) !== o) changed.add(k);
      for (const k of was.keys()) if (inNamespace(k) && !byKey.has(k)) changed.add(k);
    }
    return [...changed].sort();
  }

  private kind(kind: WatchedKind): Map<string, KubeObject> {
    let byKey = this.objects.get(kind);
    if (!byKey) this.objects.set(kind, (byKey = new Map()));
    return byKey;
  }
}
