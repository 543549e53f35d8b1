/**
 * The storage layer, standing in for etcd plus the watch cache: objects per resource, one global
 * resourceVersion counter shared by every kind (as etcd's revision is), a bounded history of
 * events so a watch can resume from an older resourceVersion, compaction, and fan-out of each
 * change to subscribers. It knows nothing of HTTP or of API semantics; registry.ts has those.
 */
import { apiVersionOf, storageOf, type ResourceDef } from './resources.js';
import type { KubeObject } from './objects.js';
import { applyDefaults } from './schema.js';

/** EventType is the type of a stored change, as a watch reports it. */
export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/**
 * inVersion is a stored object as `resource` serves it: a custom resource is kept in its CRD's
 * storage version and served in every version with only `apiVersion` changed (conversion None),
 * and its version's schema defaults are applied on the way out, as kube-apiserver does on reads
 * (so a default added to a CRD shows on objects stored before it).
 */
export function inVersion<T extends KubeObject | undefined>(resource: ResourceDef, object: T): T {
  if (object && resource.crd) {
    object.apiVersion = apiVersionOf(resource);
    applyDefaults(object, resource.crd.schema);
  }
  return object;
}

/**
 * StoreEvent is one change: the object after it (before it, for DELETED, stamped with the new
 * version). For a custom resource, `resource` is the version it was written through and `object`
 * is in the storage version: watchers compare storageOf and convert with inVersion.
 */
export interface StoreEvent {
  readonly type: EventType;
  readonly resource: ResourceDef;
  readonly object: KubeObject;
  /** The object before a MODIFIED, so a selector-filtered watch can turn it into ADDED or DELETED. */
  readonly previous?: KubeObject;
  readonly resourceVersion: number;
}

/** StoreListener receives every change, after it is stored. */
export type StoreListener = (event: StoreEvent) => void;

/** objectKey is the storage key of an object within its resource: `namespace/name` or `name`. */
export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

/** GoneError says a resourceVersion is older than the history window (etcd's "compacted"). */
export class GoneError extends Error {
  constructor(
    readonly requested: number,
    readonly oldest: number,
  ) {
    super(`too old resource version: ${requested} (${oldest + 1})`);
  }
}

/**
 * Store holds the objects and their history. Reads return copies, so callers can't change what
 * is stored behind its back; writes stamp the resourceVersion and notify subscribers at once.
 */
export class Store {
  private revision = 0;
  /** Keyed by storageOf(resource): a ResourceDef, or the name of a CRD, whose versions all share it. */
  private readonly objects = new Map<object | string, Map<string, KubeObject>>();
  private readonly history: StoreEvent[] = [];
  /** Events newer than this are in `history`; a watch from an older version gets 410. */
  private oldest = 0;
  private readonly listeners = new Set<StoreListener>();

  constructor(private readonly historyLimit = 1000) {}

  /** resourceVersion is the current revision: the version of the newest change. */
  get resourceVersion(): number {
    return this.revision;
  }

  /** oldestResourceVersion is the oldest version a watch can still start from. */
  get oldestResourceVersion(): number {
    return this.oldest;
  }

  private bucket(resource: ResourceDef): Map<string, KubeObject> {
    const key = storageOf(resource);
    let bucket = this.objects.get(key);
    if (!bucket) {
      bucket = new Map();
      this.objects.set(key, bucket);
    }
    return bucket;
  }

  /** get returns a copy of one object, or undefined. */
  get(resource: ResourceDef, namespace: string | undefined, name: string): KubeObject | undefined {
    const found = this.bucket(resource).get(objectKey(namespace, name));
    return found ? inVersion(resource, structuredClone(found)) : undefined;
  }

  /** drop forgets a resource's storage without events (its CRD is gone and every object was removed). */
  drop(resource: ResourceDef): void {
    this.objects.delete(storageOf(resource));
  }

  /** list returns copies of a resource's objects, in one namespace or all, sorted by key. */
  list(resource: ResourceDef, namespace?: string): KubeObject[] {
    const out: KubeObject[] = [];
    for (const [key, object] of [...this.bucket(resource).entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      if (namespace && !key.startsWith(`${namespace}/`)) continue;
      out.push(inVersion(resource, structuredClone(object)));
    }
    return out;
  }

  /** put stores an object (new or replacing one) under a fresh resourceVersion and announces it. */
  put(resource: ResourceDef, object: KubeObject): KubeObject {
    const key = objectKey(object.metadata.namespace, object.metadata.name);
    const bucket = this.bucket(resource);
    const previous = bucket.get(key);
    const stored = structuredClone(object);
    if (resource.crd) stored.apiVersion = resource.crd.storageApiVersion;
    stored.metadata.resourceVersion = String(++this.revision);
    bucket.set(key, stored);
    this.record(
      previous
        ? { type: 'MODIFIED', resource, object: stored, previous, resourceVersion: this.revision }
        : { type: 'ADDED', resource, object: stored, resourceVersion: this.revision },
    );
    return inVersion(resource, structuredClone(stored));
  }

  /** remove deletes an object; the DELETED event carries its last state under the deletion's version. */
  remove(resource: ResourceDef, namespace: string | undefined, name: string): KubeObject | undefined {
    const key = objectKey(namespace, name);
    const bucket = this.bucket(resource);
    const previous = bucket.get(key);
    if (!previous) return undefined;
    bucket.delete(key);
    const object = structuredClone(previous);
    object.metadata.resourceVersion = String(++this.revision);
    this.record({ type: 'DELETED', resource, object, resourceVersion: this.revision });
    return inVersion(resource, structuredClone(object));
  }

  private record(event: StoreEvent): void {
    this.history.push(event);
    while (this.history.length > this.historyLimit) this.oldest = this.history.shift()!.resourceVersion;
    for (const listener of [...this.listeners]) listener(event);
  }

  /**
   * eventsSince returns the history newer than `resourceVersion`, for a watch resuming there;
   * it throws GoneError when that version has been compacted away.
   */
  eventsSince(resourceVersion: number): StoreEvent[] {
    if (resourceVersion < this.oldest) throw new GoneError(resourceVersion, this.oldest);
    return this.history.filter((event) => event.resourceVersion > resourceVersion);
  }

  /** compact forgets all history, as etcd compaction does: only watches from now on can resume. */
  compact(): void {
    this.history.length = 0;
    this.oldest = this.revision;
  }

  /** subscribe calls `listener` for every future change; the returned function unsubscribes. */
  subscribe(listener: StoreListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
