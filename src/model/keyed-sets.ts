/**
 * KeyedSets is an index of values by key (plans by the hosts or objects they name, hosts by their certificate file):
 * a key holds a set while some value is filed under it, and goes with its last value.
 */
export class KeyedSets<K, V> {
  private readonly sets = new Map<K, Set<V>>();

  add(key: K, value: V): void {
    let set = this.sets.get(key);
    if (!set) this.sets.set(key, (set = new Set()));
    set.add(value);
  }

  delete(key: K, value: V): void {
    const set = this.sets.get(key);
    if (!set) return;
    set.delete(value);
    if (set.size === 0) this.sets.delete(key);
  }

  /** get is the values filed under `key` (none: empty). */
  get(key: K): ReadonlySet<V> {
    return this.sets.get(key) ?? NONE;
  }

  keys(): IterableIterator<K> {
    return this.sets.keys();
  }
}

const NONE: ReadonlySet<never> = new Set();
