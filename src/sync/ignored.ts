import type { ClassOptions } from '../model/build-types.js';
import { whyNotOurs } from '../model/ingress-class.js';
import type { Ingress, IngressClass } from '../model/snapshot.js';

/** ClassVerdictChange is an Ingress whose class verdict changed: `why` it is left to others, or null once it is ours. */
export interface ClassVerdictChange {
  /** `namespace/name` */
  readonly ingress: string;
  readonly why: string | null;
}

const keyOf = (ingress: Ingress) => `${ingress.metadata?.namespace ?? 'default'}/${ingress.metadata?.name ?? ''}`;

/**
 * IgnoredIngresses remembers which Ingresses the class filter leaves to other controllers, and why, so that the log
 * says it once per change rather than on every sync. Each call reads every Ingress only when the Ingress or
 * IngressClass list changed (the cache hands out the same arrays while a kind is unchanged).
 */
export class IgnoredIngresses {
  private readonly why = new Map<string, string>();
  private lastIngresses: readonly Ingress[] | null = null;
  private lastClasses: readonly IngressClass[] | null = null;

  /**
   * update judges the lists and returns what changed since the last call: newly ignored Ingresses (or ignored for
   * another reason now), and those ignored before that are ours now (`why` null). Deleted ones are forgotten quietly.
   */
  update(
    ingresses: readonly Ingress[],
    ingressClasses: readonly IngressClass[],
    options: ClassOptions,
  ): ClassVerdictChange[] {
    if (ingresses === this.lastIngresses && ingressClasses === this.lastClasses) return [];
    this.lastIngresses = ingresses;
    this.lastClasses = ingressClasses;
    const classes = new Map(ingressClasses.map((c) => [c.metadata?.name ?? '', c]));
    const changes: ClassVerdictChange[] = [];
    const seen = new Set<string>();
    for (const ingress of ingresses) {
      const key = keyOf(ingress);
      seen.add(key);
      const why = whyNotOurs(ingress, classes, options);
      const before = this.why.get(key) ?? null;
      if (why === before) continue;
      changes.push({ ingress: key, why });
      if (why === null) this.why.delete(key);
      else this.why.set(key, why);
    }
    for (const key of this.why.keys()) if (!seen.has(key)) this.why.delete(key);
    return changes;
  }
}
