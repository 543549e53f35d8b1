import type { ClassOptions } from '../model/build-types.js';
import { whyNotOurs } from '../model/ingress-class.js';
import { listChange } from '../model/incremental/list-diff.js';
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
 * IngressClass list changed (the cache hands out the same arrays while a kind is unchanged), and then under the same
 * classes only the Ingresses that changed (src/model/incremental/list-diff.ts).
 */
export class IgnoredIngresses {
  private readonly why = new Map<string, string>();
  private lastIngresses: readonly Ingress[] | null = null;
  private lastClasses: readonly IngressClass[] | null = null;
  private lastOptions: ClassOptions | null = null;

  /** the Ingresses (`namespace/name`) left to others now, and why */
  get current(): ReadonlyMap<string, string> {
    return this.why;
  }

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
    // Under the same classes only the Ingresses replaced, added or deleted since can change their verdict.
    const { gone, came } =
      this.lastIngresses !== null && ingressClasses === this.lastClasses && options === this.lastOptions
        ? listChange(this.lastIngresses, ingresses)
        : { gone: [], came: ingresses };
    const whole = came === ingresses;
    this.lastIngresses = ingresses;
    this.lastClasses = ingressClasses;
    this.lastOptions = options;
    const classes = new Map(ingressClasses.map((c) => [c.metadata?.name ?? '', c]));
    const changes: ClassVerdictChange[] = [];
    const seen = new Set<string>();
    for (const ingress of came) {
      const key = keyOf(ingress);
      seen.add(key);
      const why = whyNotOurs(ingress, classes, options);
      const before = this.why.get(key) ?? null;
      if (why === before) continue;
      changes.push({ ingress: key, why });
      if (why === null) this.why.delete(key);
      else this.why.set(key, why);
    }
    const forgotten = whole ? this.why.keys() : gone.map(keyOf);
    for (const key of forgotten) if (!seen.has(key)) this.why.delete(key);
    return changes;
  }
}
