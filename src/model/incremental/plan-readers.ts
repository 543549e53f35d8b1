/**
 * PlanReaders: the last build's plans by the objects they read (Services, Secrets, a Service's EndpointSlices), so a
 * changed object finds the few plans it may change instead of every plan checking every object it read.
 */
import type { IngressPlan } from '../ingress-plan.js';
import { KeyedSets } from '../keyed-sets.js';
import { addedAndRemoved } from './list-diff.js';

export class PlanReaders {
  private plans: readonly IngressPlan[] = [];
  private readonly byKey = new KeyedSets<string, IngressPlan>();

  /** update brings the index to `plans` (the build's, every one): what came and went since the last update. */
  update(plans: readonly IngressPlan[]): void {
    const { added, removed } = addedAndRemoved(this.plans, plans);
    for (const plan of added) for (const key of plan.reads.keys()) this.byKey.add(key, plan);
    for (const plan of removed) for (const key of plan.reads.keys()) this.byKey.delete(key, plan);
    this.plans = plans;
  }

  /** of are the plans held that read one of `keys` (Lookups.changedKeys' names). */
  of(keys: Iterable<string>): Set<IngressPlan> {
    const found = new Set<IngressPlan>();
    for (const key of keys) for (const plan of this.byKey.get(key)) found.add(plan);
    return found;
  }
}
