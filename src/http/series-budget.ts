/**
 * How many request-metric series (label sets) each Ingress may have, so that one tenant cannot starve the others:
 * a cap per Ingress and per namespace, a shared pool for all, and a few series per Ingress that the pool being full
 * never denies (a new Ingress always gets its first ones). The request metrics' owner of a series is its Ingress
 * (`namespace/name`); requests no Ingress took (the catch-all's `host="_"`) belong to the owner `''` in namespace ''.
 */

/** SeriesLimits bound the series the request metrics keep. */
export interface SeriesLimits {
  /** series of all Ingresses, beyond each one's reserved */
  readonly total: number;
  /** series of one Ingress at most */
  readonly perIngress: number;
  /** series of one namespace's Ingresses at most */
  readonly perNamespace: number;
  /** series of each Ingress the full pool does not deny (the namespace's cap still does) */
  readonly reserved: number;
}

/** DEFAULT_SERIES_LIMITS are the limits docs/operations.md states. */
export const DEFAULT_SERIES_LIMITS: SeriesLimits = {
  total: 10_000,
  perIngress: 500,
  perNamespace: 2_000,
  reserved: 10,
};

/** Refusal says which limit kept a series out. */
export type Refusal = 'ingress' | 'namespace' | 'total';

/** SeriesBudget counts the series each owner holds and decides whether a new one may be added. */
export class SeriesBudget {
  private readonly owners = new Map<string, number>();
  private readonly namespaces = new Map<string, number>();
  /** series counted against the shared pool (those beyond each owner's reserved) */
  private pooled = 0;

  constructor(readonly limits: SeriesLimits) {}

  /** size is how many series are held. */
  get size(): number {
    let n = 0;
    for (const count of this.owners.values()) n += count;
    return n;
  }

  /** countOf is how many series `owner` holds. */
  countOf(owner: string): number {
    return this.owners.get(owner) ?? 0;
  }

  /** admit adds a series of `owner` (in `namespace`) when the limits allow it; else says which limit refused. */
  admit(owner: string, namespace: string): Refusal | null {
    const held = this.owners.get(owner) ?? 0;
    const inNamespace = this.namespaces.get(namespace) ?? 0;
    if (held >= this.limits.perIngress) return 'ingress';
    if (inNamespace >= this.limits.perNamespace) return 'namespace';
    const pooled = held >= this.limits.reserved;
    if (pooled && this.pooled >= this.limits.total) return 'total';
    this.owners.set(owner, held + 1);
    this.namespaces.set(namespace, inNamespace + 1);
    if (pooled) this.pooled++;
    return null;
  }

  /** release takes back every series of `owner` (in `namespace`): its Ingress is gone. */
  release(owner: string, namespace: string): void {
    const held = this.owners.get(owner) ?? 0;
    if (held === 0) return;
    this.owners.delete(owner);
    const left = (this.namespaces.get(namespace) ?? 0) - held;
    if (left > 0) this.namespaces.set(namespace, left);
    else this.namespaces.delete(namespace);
    this.pooled -= Math.max(0, held - this.limits.reserved);
  }
}
