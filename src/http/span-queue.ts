/**
 * SpanQueue holds written spans waiting for export (src/http/spans.ts) in slabs of 64 KB that are used again once
 * their spans were sent: no object per span for the garbage collector to carry while they wait, no fresh memory per
 * drain (a page fault costs about 15 µs on the benchmark's virtual machine: fresh megabytes each second cost more than
 * writing the spans), and a batch is a slice of each slab it takes spans from.
 */

const SLAB = 64 * 1024;
/** free slabs kept for reuse at most (4 MB) */
const MAX_FREE = 64;

interface Slab {
  readonly bytes: Buffer;
  /** where each span ends in `bytes` */
  readonly ends: number[];
  /** the first span not yet taken */
  first: number;
  /** batches under way that hold a slice of it */
  sending: number;
  /** every span was taken and no span will be added: reusable once no batch holds it */
  done: boolean;
}

/** Batch is what take() gives: the spans' bytes, in order, and how many spans they are; release() it once sent. */
export interface Batch {
  readonly parts: Buffer[];
  readonly count: number;
  readonly slabs: readonly Slab[];
}

export class SpanQueue {
  private slabs: Slab[] = [];
  private readonly free: Buffer[] = [];
  private size = 0;

  /** length is how many spans wait */
  get length(): number {
    return this.size;
  }

  /** push queues a copy of the span written in the first `length` bytes of `bytes` */
  push(bytes: Buffer, length: number): void {
    let tail = this.slabs[this.slabs.length - 1];
    let at = tail && tail.ends.length > 0 ? tail.ends[tail.ends.length - 1]! : 0;
    if (tail === undefined || at + length > tail.bytes.length) {
      if (tail) this.seal(tail);
      // a span longer than a slab (a long name) gets a buffer of its own
      const fresh = length > SLAB ? Buffer.allocUnsafe(length) : (this.free.pop() ?? Buffer.allocUnsafe(SLAB));
      tail = { bytes: fresh, ends: [], first: 0, sending: 0, done: false };
      this.slabs.push(tail);
      at = 0;
    }
    bytes.copy(tail.bytes, at, 0, length);
    tail.ends.push(at + length);
    this.size++;
  }

  /** take removes the `count` oldest spans (or all, when fewer wait) */
  take(count: number): Batch {
    const parts: Buffer[] = [];
    const held: Slab[] = [];
    let taken = 0;
    while (taken < count && this.slabs.length > 0) {
      const slab = this.slabs[0]!;
      if (slab.first === slab.ends.length) break; // the tail, empty
      const last = Math.min(slab.ends.length, slab.first + count - taken);
      const from = slab.first === 0 ? 0 : slab.ends[slab.first - 1]!;
      parts.push(slab.bytes.subarray(from, slab.ends[last - 1]));
      held.push(slab);
      slab.sending++;
      taken += last - slab.first;
      slab.first = last;
      if (last === slab.ends.length) this.seal(slab);
    }
    this.size -= taken;
    return { parts, count: taken, slabs: held };
  }

  /** release gives back the slabs a batch held, once it was sent (or dropped) */
  release(batch: Batch): void {
    for (const slab of batch.slabs) {
      slab.sending--;
      this.recycle(slab);
    }
  }

  /** keep drops the newest spans past `most`; how many it dropped */
  keep(most: number): number {
    let over = this.size - most;
    const dropped = Math.max(over, 0);
    while (over > 0) {
      const slab = this.slabs[this.slabs.length - 1]!;
      const queued = slab.ends.length - slab.first;
      const cut = Math.min(queued, over);
      slab.ends.length -= cut;
      over -= cut;
      if (slab.first === slab.ends.length) this.seal(slab);
    }
    this.size -= dropped;
    return dropped;
  }

  /** seal takes a slab out of the queue once all its spans were taken (or it is full: then when they are) */
  private seal(slab: Slab): void {
    if (slab.first < slab.ends.length) return; // spans of it still wait; it is sealed when the last is taken
    slab.done = true;
    if (this.slabs[0] === slab) this.slabs.shift();
    else this.slabs = this.slabs.filter((s) => s !== slab);
    this.recycle(slab);
  }

  private recycle(slab: Slab): void {
    if (slab.done && slab.sending === 0 && slab.bytes.length === SLAB && this.free.length < MAX_FREE)
      this.free.push(slab.bytes);
  }
}
