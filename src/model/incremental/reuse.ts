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
  /**
   * the objects changed since the last build as Lookups.changedKeys names them; null: no last build, or more than a
   * few changed (every plan looks at its reads then)
   */
  readonly keys: readonly string[] | null;
  /** no Service and no EndpointSlice changed since the last build */
  readonly onlySecretsMoved: boolean;
}

/** changesSince compares this build's objects with the last build's. */
export function changesSince(lookups: Lookups, previous: Lookups | undefined): Changes {
  if (previous === undefined) return { lookups, previous, secrets: null, keys: null, onlySecretsMoved: false };
  const onlySecretsMoved = lookups.services === previous.services && lookups.slices === previous.slices;
  const keys = lookups.sameObjectsAs === previous.sameObjectsAs ? [] : lookups.changedKeys(previous, FEW);
  return { lookups, previous, secrets: lookups.changedSecrets(previous, keys), keys, onlySecretsMoved };
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
  const { lookups, previous, secrets, keys, onlySecretsMoved } = changes;
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
  // The last build's plans all held for its objects: only the Ingresses replaced, added or deleted since need a look,
  // and the plans that read an object changed since (one change at 10,000 Ingresses costs one plan, not 10,000 looks).
  const last = memo.planFrom;
  const stale = last === null || keys === null || memo.planList.length !== last.length ? null : memo.readers.of(keys);
  let plans: IngressPlan[];
  if (last !== null && stale !== null && stale.size <= FEW) {
    let { start, end, came } = listChange(last, ours);
    plans = [...memo.planList.slice(0, start), ...came.map(planOf), ...memo.planList.slice(memo.planList.length - end)];
    for (const plan of stale) {
      const at = plans.indexOf(plan);
      if (at < 0) continue; // its Ingress was replaced or deleted: planned above, or gone
      plans[at] = planOf(ours[at]!);
      start = Math.min(start, at);
      end = Math.min(end, plans.length - at - 1);
    }
    tellChange(memo.planList, plans, start, end);
  } else plans = ours.map(planOf);
  memo.readers.update(plans);
  return plans;
}

/** more changed objects, or plans that read them, than this: every plan is looked at */
const FEW = 64;

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
