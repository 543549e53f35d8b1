/**
 * KeyedDigest: the version of a keyed table (entries by key) as a digest that one changed entry does not make again
 * from all of them. Entries fall in buckets by their key; a change makes its bucket's digest again (its entries,
 * sorted), then the version is the digest of the buckets' digests. The same entries give the same version, whatever
 * came before (a restarted controller agrees with nginx's held version on the same content), and SHA-256 throughout
 * keeps two contents from sharing a version.
 */
import { createHash } from 'node:crypto';

const BUCKETS = 256;

/** bucketOf is the bucket a key's entry is digested in (FNV-1a of the key). */
export function bucketOf(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % BUCKETS;
}

export class KeyedDigest {
  private readonly buckets: Map<string, string>[] = Array.from({ length: BUCKETS }, () => new Map());
  /** each bucket's digest, null when to make again */
  private readonly digests: (string | null)[] = new Array<string | null>(BUCKETS).fill(null);
  private last: string | null = null;

  set(key: string, json: string): void {
    const b = bucketOf(key);
    if (this.buckets[b]!.get(key) === json) return;
    this.buckets[b]!.set(key, json);
    this.digests[b] = null;
    this.last = null;
  }

  delete(key: string): void {
    const b = bucketOf(key);
    if (!this.buckets[b]!.delete(key)) return;
    this.digests[b] = null;
    this.last = null;
  }

  /** version is the digest of every entry held (32 hex digits). */
  version(): string {
    if (this.last !== null) return this.last;
    // one update of every bucket's line: 256 small updates cost more than the hashing
    let lines = '';
    for (let b = 0; b < BUCKETS; b++) {
      const bucket = this.buckets[b]!;
      if (bucket.size === 0) continue;
      let digest = this.digests[b];
      if (digest == null) {
        const keys = [...bucket.keys()].sort();
        let text = '';
        for (const key of keys) text += `${key}\n${bucket.get(key)!}\n`;
        digest = this.digests[b] = createHash('sha256').update(text).digest('hex');
      }
      lines += `${b} ${digest}\n`;
    }
    this.last = createHash('sha256').update(lines).digest('hex').slice(0, 32);
    return this.last;
  }
}
