import type { KubeObject, Snapshot } from '../model/snapshot.js';
import type { WatchedKind } from './kinds.js';

/** The annotation that names an htpasswd Secret, which matters to nginx.conf like a TLS Secret does. */
const AUTH_SECRET_ANNOTATION = 'nginx.ingress.kubernetes.io/auth-secret';

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
    const changed = !old || old.metadata?.resourceVersion !== obj.metadata?.resourceVersion || !obj.metadata?.resourceVersion;
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

  /** list returns every object held of a kind; the same array while the kind is unchanged, never one that changes later. */
  list<T extends KubeObject>(kind: WatchedKind): readonly T[] {
    let list = this.lists.get(kind);
    if (!list) this.lists.set(kind, (list = Object.freeze([...this.kind(kind).values()])));
    return list as readonly T[];
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
    };
  }

  /**
   * referencesSecret says whether any Ingress names the Secret: in spec.tls, or in the
   * `auth-secret` annotation (`name` or `namespace/name`), or a flag does.
   */
  referencesSecret(namespace: string, name: string, flagged: readonly string[] = []): boolean {
    const key = `${namespace}/${name}`;
    if (flagged.includes(key)) return true;
    return this.list<Snapshot['ingresses'][number]>('Ingress').some((ing) => {
      const ns = ing.metadata?.namespace ?? '';
      const auth = ing.metadata?.annotations?.[AUTH_SECRET_ANNOTATION];
      if (auth !== undefined && (auth.includes('/') ? auth : `${ns}/${auth}`) === key) return true;
      return ns === namespace && (ing.spec?.tls ?? []).some((t) => t.secretName === name);
    });
  }

  private kind(kind: WatchedKind): Map<string, KubeObject> {
    let byKey = this.objects.get(kind);
    if (!byKey) this.objects.set(kind, (byKey = new Map()));
    return byKey;
  }
}
