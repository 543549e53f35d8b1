/**
 * The reuse checks: which of the memo's plans still hold for this build's objects, and which
 * hosts a changed Secret sends back to be settled again.
 */
import { planIngress, type IngressPlan, type PlanContext } from '../ingress-plan.js';
import type { Lookups } from '../lookups.js';
import type { Ingress } from '../snapshot.js';
import { listChange, tellChange } from './list-diff.js';
import type { BuildMemo } from './memo.js';

/** Changes are what moved since the last build, as far as plans and hosts care. */
export interface Changes {
  readonly lookups: Lookups;
  /** the last build's, if any */
  readonly previous: Lookups | undefined;
  /** the Secrets (namespace/name) added, removed or replaced since the last build; null: no last build */
  readonly secrets: ReadonlySet<string> | null;
  /** no Service and no EndpointSlice changed since the last build */
  readonly onlySecretsMoved: boolean;
}

/** changesSince compares this build's objects with the last build's. */
export function changesSince(lookups: Lookups, previous: Lookups | undefined): Changes {
  if (previous === undefined) return { lookups, previous, secrets: null, onlySecretsMoved: false };
  const onlySecretsMoved = lookups.services === previous.services && lookups.slices === previous.slices;
  return { lookups, previous, secrets: lookups.changedSecrets(previous), onlySecretsMoved };
}

/**
 * reusedOrNewPlans gives each Ingress its plan: the memo's while every object the plan read is
 * the same object, a new one otherwise.
 */
export function reusedOrNewPlans(
  ours: readonly Ingress[],
  memo: BuildMemo,
  changes: Changes,
  ctx: PlanContext,
): IngressPlan[] {
  const { lookups, previous, secrets, onlySecretsMoved } = changes;
  const objects = lookups.sameObjectsAs;
  // For the plans the last build checked: when no Service or EndpointSlice changed since, only the Secrets they read
  // need a look; when no object changed at all, nothing does.
  const holds = (known: { plan: IngressPlan; checkedIn: Lookups }) =>
    known.checkedIn === objects ||
    (onlySecretsMoved && known.checkedIn === previous?.sameObjectsAs
      ? !known.plan.reads.readAnySecretOf(secrets!)
      : known.plan.reads.unchangedIn(lookups));
  const planOf = (ingress: Ingress) => {
    const known = memo.plans.get(ingress);
    if (known && holds(known)) {
      known.checkedIn = objects;
      return known.plan;
    }
    const plan = planIngress(ingress, ctx);
    memo.plans.set(ingress, { plan, checkedIn: objects });
    return plan;
  };
  // No object changed since the last build, whose plans were all checked against these objects: only the Ingresses
  // replaced, added or deleted since need a look (one change at 10,000 Ingresses costs one plan, not 10,000 lookups).
  const last = memo.planFrom;
  if (last !== null && objects === previous?.sameObjectsAs && memo.planList.length === last.length) {
    const { start, end, came } = listChange(last, ours);
    const plans = [
      ...memo.planList.slice(0, start),
      ...came.map(planOf),
      ...memo.planList.slice(memo.planList.length - end),
    ];
    tellChange(memo.planList, plans, start, end);
    return plans;
  }
  return ours.map(planOf);
}

/**
 * secretsToResettle names the changed Secrets whose hosts are settled again; `all` (every TLS
 * host) when there is no last build or the default certificate's changed, which any host may fall back to.
 */
export function secretsToResettle(
  changes: Changes,
  defaultSslCertificate: string | undefined,
): ReadonlySet<string> | 'all' {
  const { secrets } = changes;
  if (secrets === null || (defaultSslCertificate !== undefined && secrets.has(defaultSslCertificate))) return 'all';
  return secrets;
}
