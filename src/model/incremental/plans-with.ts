/**
 * PlansWith keeps, from build to build, the plans one property picks (in the plans' order): the last answer while no
 * plan that came or went since has it, so one changed Ingress among 10,000 costs a walk of reference comparisons.
 */
import type { IngressPlan } from '../ingress-plan.js';
import { listChange } from './list-diff.js';

export class PlansWith {
  private last: { readonly plans: readonly IngressPlan[]; readonly found: readonly IngressPlan[] } | null = null;

  constructor(private readonly has: (plan: IngressPlan) => boolean) {}

  /** of gives the plans among `plans` that have the property. */
  of(plans: readonly IngressPlan[]): readonly IngressPlan[] {
    const last = this.last;
    if (last !== null) {
      const { gone, came } = listChange(last.plans, plans);
      if (!gone.some(this.has) && !came.some(this.has)) {
        this.last = { plans, found: last.found };
        return last.found;
      }
    }
    const found = plans.filter(this.has);
    this.last = { plans, found };
    return found;
  }
}
