/**
 * A map handed out at every sync without being copied: the shared server's table holds 10,000 hosts, a sync changes
 * a few, and copying a Map of 10,000 entries costs more (5–40 ms) than the rest of the sync's routes-as-data work.
 */

/** GONE marks, in a layer's changes, a key its base has and the layer has not. */
const GONE: unique symbol = Symbol('gone');

/**
 * LayeredMap is a read-only map made of a base nobody changes any more and the changes since (a small map): what a
 * LayeredMapWriter hands out. Values are never undefined.
 */
export class LayeredMap<K, V> implements ReadonlyMap<K, V> {
  constructor(
    private readonly base: ReadonlyMap<K, V>,
    private readonly changes: ReadonlyMap<K, V | typeof GONE>,
    readonly size: number,
  ) {}

  get(key: K): V | undefined {
    const changed = this.changes.get(key);
    if (changed === undefined) return this.base.get(key);
    return changed === GONE ? undefined : changed;
  }

  has(key: K): boolean {
    const changed = this.changes.get(key);
    return changed === undefined ? this.base.has(key) : changed !== GONE;
  }

  /**
   * changedSince names every key whose value may differ between `other` and this map (a superset: each view's changes
   * since their common base), or null when `other` is not a view on the same base (then only a walk of both tells).
   */
  changedSince(other: ReadonlyMap<K, V>): Iterable<K> | null {
    if (!(other instanceof LayeredMap) || other.base !== this.base) return null;
    if (other.changes.size === 0) return this.changes.keys();
    return new Set([...this.changes.keys(), ...(other.changes as ReadonlyMap<K, unknown>).keys()]);
  }

  *entries(): MapIterator<[K, V]> {
    for (const entry of this.base) if (!this.changes.has(entry[0])) yield entry;
    for (const [key, value] of this.changes) if (value !== GONE) yield [key, value];
  }

  *keys(): MapIterator<K> {
    for (const [key] of this.entries()) yield key;
  }

  *values(): MapIterator<V> {
    for (const [, value] of this.entries()) yield value;
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries();
  }

  forEach(callback: (value: V, key: K, map: ReadonlyMap<K, V>) => void, thisArg?: unknown): void {
    for (const [key, value] of this.entries()) callback.call(thisArg, value, key, this);
  }
}

/**
 * LayeredMapWriter is a map changed in place whose `view` is a LayeredMap that later changes leave as it was. A view
 * costs the changes since the base was last made (copied); the base is made again, from base and changes, once the
 * changes pass a sixteenth of the entries (at least 256), so a change costs O(1) amortised, never a copy of all.
 */
export class LayeredMapWriter<K, V> {
  private base = new Map<K, V>();
  private changes = new Map<K, V | typeof GONE>();
  private count = 0;
  private current: LayeredMap<K, V> | null = null;

  get size(): number {
    return this.count;
  }

  get(key: K): V | undefined {
    const changed = this.changes.get(key);
    if (changed === undefined) return this.base.get(key);
    return changed === GONE ? undefined : changed;
  }

  has(key: K): boolean {
    return this.get(key) !== undefined;
  }

  set(key: K, value: V): void {
    if (!this.has(key)) this.count++;
    else if (this.get(key) === value) return;
    this.changes.set(key, value);
    this.current = null;
  }

  delete(key: K): void {
    if (!this.has(key)) return;
    this.count--;
    if (this.base.has(key)) this.changes.set(key, GONE);
    else this.changes.delete(key);
    this.current = null;
  }

  /** view is the map as it is now, unchanged by what the writer does next. */
  view(): LayeredMap<K, V> {
    if (this.current) return this.current;
    if (this.changes.size > Math.max(256, this.count >> 4)) {
      // a new base, never the one a view holds
      const base = new Map<K, V>();
      for (const [key, value] of this.base) if (!this.changes.has(key)) base.set(key, value);
      for (const [key, value] of this.changes) if (value !== GONE) base.set(key, value);
      this.base = base;
      this.changes = new Map();
    }
    this.current = new LayeredMap<K, V>(this.base, new Map(this.changes), this.count);
    return this.current;
  }
}

/**
 * changedKeys names the keys whose values may differ between two maps: what the views' layers changed when both are
 * views on one base, or null when only a walk of both can tell.
 */
export function changedKeys<K, V>(next: ReadonlyMap<K, V>, held: ReadonlyMap<K, V>): Iterable<K> | null {
  return next instanceof LayeredMap ? (next as LayeredMap<K, V>).changedSince(held) : null;
}
