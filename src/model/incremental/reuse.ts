/**
 * The reuse checks: which of the memo's plans still hold for this build's objects, and which
 * hosts a changed Secret sends back to be settled again.
 */
import { planIngress, type IngressPlan, type PlanContext } from '../ingress-plan.js';
import type { Lookups } from '../lookups.js';
import type { Ingress } from '../snapshot.js';
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
  // For the plans the last build checked: when no Service or EndpointSlice changed since, only the Secrets they read
  // need a look.
  const holds = (known: { plan: IngressPlan; checkedIn: Lookups }) =>
    onlySecretsMoved && known.checkedIn === previous
      ? !known.plan.reads.readAnySecretOf(secrets!)
      : known.plan.reads.unchangedIn(lookups);
  return ours.map((ingress) => {
    const known = memo.plans.get(ingress);
    if (known && holds(known)) {
      known.checkedIn = lookups;
      return known.plan;
    }
    const plan = planIngress(ingress, ctx);
    memo.plans.set(ingress, { plan, checkedIn: lookups });
    return plan;
  });
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
