/**
 * Tally is a union of keyed entries that many contributors (Ingress plans, hosts) add and later
 * take back, each key counted once per contribution, so one contributor can leave the union
 * without rebuilding it from all the others. Contributors that name the same key give it the
 * same content (upstream names, zone names and map variables are derived from that content), so
 * which contributor's value is kept does not matter.
 */
export class Tally<K, V> {
  private readonly entries = new Map<K, { value: V; count: number }>();
  /** Bumped whenever a key appears, disappears or takes a value `same` calls different. */
  version = 0;
  /** the keys that did so since the last takeChanges(), kept once someone asks */
  private changed: Set<K> | null = null;

  constructor(private readonly same: (a: V, b: V) => boolean = Object.is) {}

  add(key: K, value: V): void {
    const entry = this.entries.get(key);
    if (!entry) {
      this.entries.set(key, { value, count: 1 });
      this.bump(key);
      return;
    }
    entry.count++;
    if (!this.same(entry.value, value)) this.bump(key);
    entry.value = value;
  }

  remove(key: K): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    if (--entry.count > 0) return;
    this.entries.delete(key);
    this.bump(key);
  }

  /**
   * takeChanges gives the keys that appeared, disappeared or changed value since the last call (the first call: null,
   * as everything did) and starts counting afresh. One reader per tally.
   */
  takeChanges(): ReadonlySet<K> | null {
    const changed = this.changed;
    this.changed = new Set();
    return changed;
  }

  private bump(key: K): void {
    this.version++;
    this.changed?.add(key);
  }

  addAll(from: ReadonlyMap<K, V>): void {
    for (const [key, value] of from) this.add(key, value);
  }

  removeAll(from: ReadonlyMap<K, V>): void {
    for (const key of from.keys()) this.remove(key);
  }

  get(key: K): V | undefined {
    return this.entries.get(key)?.value;
  }

  has(key: K): boolean {
    return this.entries.has(key);
  }

  get size(): number {
    return this.entries.size;
  }

  keys(): IterableIterator<K> {
    return this.entries.keys();
  }

  *values(): IterableIterator<V> {
    for (const entry of this.entries.values()) yield entry.value;
  }
}
