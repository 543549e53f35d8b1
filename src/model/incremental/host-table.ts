/**
 * The bookkeeping of a build's hosts, kept between builds: which plans touch which host, which
 * hosts a change leaves dirty, each host's last result (src/model/host-rules.ts settles one), and
 * the tallies (zones, maps, upstreams, certificates…) that plans and hosts contribute to. When a
 * few plans change, only their hosts are settled again; every other host keeps its server and
 * the problems it gave its plans. A fresh build is the same work with every host new.
 */
import { HttpExtrasTally } from '../annotations/http-extras.js';
import { sameVariant, type Variant } from '../annotations/apply.js';
import type { UpstreamTable } from '../backends.js';
import { resolveHost, type HostContext, type HostResult } from '../host-rules.js';
import { CATCH_ALL, type IngressPlan, type Step, type TlsStep } from '../ingress-plan.js';
import type { Certificate, Problem, Server, Upstream } from '../nginx-model.js';
import { KeyedSets } from '../keyed-sets.js';
import { lowerBound } from '../sorted.js';
import { Tally } from '../tally.js';
import { addedAndRemoved, tellChange } from './list-diff.js';

/** The problems of one plan that depend on the hosts it touches, each list in the plan's own order. */
interface PlanProblems {
  readonly steps: readonly Problem[];
  readonly canaries: readonly Problem[];
  readonly tls: readonly Problem[];
}

const NO_PROBLEMS: PlanProblems = Object.freeze({ steps: [], canaries: [], tls: [] });

/**
 * HostTable keeps every host's result between builds, the plans by the hosts they touch, and the
 * unions (zones, maps, upstreams, certificates…) that plans and hosts contribute to, so `update`
 * costs what changed, not what there is.
 */
export class HostTable {
  private plans: readonly IngressPlan[] = [];
  private readonly stepPlans = new KeyedSets<string, IngressPlan>();
  private readonly tlsPlans = new KeyedSets<string, IngressPlan>();
  /** the plans by the Secrets (namespace/name) their TLS claims name: a changed Secret finds its hosts here */
  private readonly secretPlans = new KeyedSets<string, IngressPlan>();
  private readonly results = new Map<string, HostResult>();
  private readonly planProblems = new Map<IngressPlan, PlanProblems>();
  /** the plans' problem segments in plan order, made again only when a plan's problems changed (null) */
  private problemSegments: PlanProblems[] | null = [];
  private hostNames: string[] = [];
  /** each host's server in hostNames' order; copied before a change once handed out (servers()), never changed after */
  private serverList: Server[] = [];
  private serverListHandedOut = false;
  /** the list last handed out, and the range of serverList changed since (told to listChange at the next hand-out) */
  private changedSince: { readonly list: readonly Server[]; start: number; end: number } | null = null;
  /** the --default-backend-service table counted in `used` and `sliceProblems` */
  private defaultTable: UpstreamTable | null = null;

  readonly extras = new HttpExtrasTally();
  readonly variants = new Tally<string, Variant>(sameVariant);
  readonly used = new Tally<string, Upstream>();
  readonly sliceProblems = new Tally<string, Problem>();
  readonly proxied = new Tally<string, true>();
  readonly certificates = new Tally<string, Certificate>();
  /** the hosts whose servers use auth-url: nginx.conf then needs a resolver and $escaped_request_uri */
  readonly externalAuthHosts = new Tally<string, true>();

  /**
   * update brings the table to `plans` (every plan of the build, in conflict order).
   * `secretsChanged` names the Secrets (namespace/name) that changed since the last update: the
   * hosts whose TLS claims name one are worked out again; `all`, every host with a TLS claim.
   */
  update(plans: readonly IngressPlan[], ctx: HostContext, secretsChanged: ReadonlySet<string> | 'all'): void {
    const { added, removed } = addedAndRemoved(this.plans, plans);
    const dirty = new Set<string>(this.results.size === 0 ? [CATCH_ALL] : []);
    const touch = (plan: IngressPlan) => {
      for (const host of plan.stepsByHost.keys()) dirty.add(host);
      for (const host of plan.tlsHosts) dirty.add(host);
    };
    // Contributions are added before the old ones are taken back, so an unchanged key never leaves a tally.
    for (const plan of added) if (plan.identified) this.contribute(plan, +1, touch);
    for (const plan of removed) if (plan.identified) this.contribute(plan, -1, touch);
    if (secretsChanged === 'all') for (const host of this.tlsPlans.keys()) dirty.add(host);
    else if (secretsChanged.size > 0) for (const host of this.hostsNaming(secretsChanged)) dirty.add(host);

    const recount = new Set<IngressPlan>(added.filter((p) => p.identified));
    for (const host of dirty) {
      const stepPlans = [...this.stepPlans.get(host)].sort(ctx.order);
      const tlsPlans = [...this.tlsPlans.get(host)].sort(ctx.order);
      const previous = this.results.get(host);
      // A host whose claims changed changes the problems of every plan aimed at it, TLS ones included.
      for (const plan of stepPlans) recount.add(plan);
      for (const plan of tlsPlans) recount.add(plan);
      if (stepPlans.length === 0 && host !== CATCH_ALL) {
        if (previous) this.dropHost(host, previous);
        continue;
      }
      this.keepHost(host, resolveHost(host, stepPlans, tlsPlans, ctx, previous), previous);
    }
    for (const plan of removed) this.setProblems(plan, NO_PROBLEMS);
    for (const plan of recount) this.setProblems(plan, this.problemsOf(plan));
    this.plans = plans;
  }

  /** hostsNaming lists the hosts whose TLS claims, in the plans held, name one of `secrets` (namespace/name). */
  private *hostsNaming(secrets: ReadonlySet<string>): Iterable<string> {
    for (const secret of secrets)
      for (const plan of this.secretPlans.get(secret))
        for (const step of plan.tls)
          if (step.kind === 'claim' && step.secretName && `${plan.identified!.namespace}/${step.secretName}` === secret)
            yield step.host;
  }

  /** countDefaultBackend counts the --default-backend-service table's upstreams, in place of the last build's. */
  countDefaultBackend(table: UpstreamTable | null): void {
    // Added before the old ones are taken back, as for plans.
    if (table) {
      this.used.addAll(table.used);
      this.sliceProblems.addAll(table.sliceProblems);
    }
    if (this.defaultTable) {
      this.used.removeAll(this.defaultTable.used);
      this.sliceProblems.removeAll(this.defaultTable.sliceProblems);
    }
    this.defaultTable = table;
  }

  /** servers are every host's server, the catch-all `_` among them, sorted by host (code-unit order). */
  servers(): readonly Server[] {
    const changed = this.changedSince;
    if (changed !== null) tellChange(changed.list, this.serverList, changed.start, changed.end);
    this.changedSince = null;
    this.serverListHandedOut = true;
    return this.serverList;
  }

  /**
   * changeServers sets, inserts or removes the server at `at` of serverList, copied first if it was handed out (a list
   * given to a build never changes), and widens the range changed since.
   */
  private changeServers(at: number, change: 'set' | 'insert' | 'remove', server?: Server): void {
    if (this.serverListHandedOut) {
      this.changedSince = { list: this.serverList, start: at, end: this.serverList.length };
      this.serverList = this.serverList.slice();
      this.serverListHandedOut = false;
    }
    const list = this.serverList;
    if (this.changedSince !== null) {
      this.changedSince.start = Math.min(this.changedSince.start, at);
      this.changedSince.end = Math.min(this.changedSince.end, list.length - at - (change === 'insert' ? 0 : 1));
    }
    if (change === 'set') list[at] = server!;
    else if (change === 'insert') list.splice(at, 0, server!);
    else list.splice(at, 1);
  }

  /** problemsInto adds the plans' host-dependent problems in the order a build reports them: rules, canaries, TLS. */
  problemsInto(problems: Problem[]): void {
    if (this.problemSegments === null) {
      this.problemSegments = [];
      for (const plan of this.plans) {
        const segment = this.planProblems.get(plan);
        if (segment) this.problemSegments.push(segment);
      }
    }
    const segments = this.problemSegments;
    for (const s of segments) problems.push(...s.steps);
    for (const s of segments) problems.push(...s.canaries);
    for (const s of segments) problems.push(...s.tls);
  }

  /**
   * setProblems records a plan's problems (only plans with some are held). Plans keep their relative order from one
   * build to the next (an Ingress keeps its age), so the segments are made again only when one of them changed.
   */
  private setProblems(plan: IngressPlan, problems: PlanProblems): void {
    const before = this.planProblems.get(plan);
    if (problems === NO_PROBLEMS) {
      if (before === undefined) return;
      this.planProblems.delete(plan);
    } else this.planProblems.set(plan, problems);
    this.problemSegments = null;
  }

  private contribute(plan: IngressPlan, sign: 1 | -1, touch: (plan: IngressPlan) => void): void {
    const index = (byKey: KeyedSets<string, IngressPlan>, keys: Iterable<string>) => {
      for (const key of keys)
        if (sign > 0) byKey.add(key, plan);
        else byKey.delete(key, plan);
    };
    index(this.stepPlans, plan.stepsByHost.keys());
    index(this.tlsPlans, plan.tlsHosts);
    index(this.secretPlans, claimedSecrets(plan));
    touch(plan);
    if (sign > 0) {
      this.extras.add(plan.extras);
      this.variants.addAll(plan.variants.entries);
      this.used.addAll(plan.upstreams.used);
      this.sliceProblems.addAll(plan.upstreams.sliceProblems);
    } else {
      this.extras.remove(plan.extras);
      this.variants.removeAll(plan.variants.entries);
      this.used.removeAll(plan.upstreams.used);
      this.sliceProblems.removeAll(plan.upstreams.sliceProblems);
    }
  }

  private keepHost(host: string, result: HostResult, previous: HostResult | undefined): void {
    for (const name of result.proxied) this.proxied.add(name, true);
    this.extras.add(result.canaries);
    if (result.certificate) this.certificates.add(result.certificate.id, result.certificate);
    if (result.externalAuth) this.externalAuthHosts.add(host, true);
    const at = lowerBound(this.hostNames, (h) => h < host);
    if (previous) {
      this.release(host, previous);
      if (result.server !== previous.server) this.changeServers(at, 'set', result.server);
    } else {
      this.hostNames.splice(at, 0, host);
      this.changeServers(at, 'insert', result.server);
    }
    this.results.set(host, result);
  }

  private dropHost(host: string, previous: HostResult): void {
    this.release(host, previous);
    this.results.delete(host);
    const at = lowerBound(this.hostNames, (h) => h < host);
    this.hostNames.splice(at, 1);
    this.changeServers(at, 'remove');
  }

  private release(host: string, result: HostResult): void {
    for (const name of result.proxied) this.proxied.remove(name);
    this.extras.remove(result.canaries);
    if (result.certificate) this.certificates.remove(result.certificate.id);
    if (result.externalAuth) this.externalAuthHosts.remove(host);
  }

  private problemsOf(plan: IngressPlan): PlanProblems {
    const steps: Problem[] = [];
    const canaries: Problem[] = [];
    const tls: Problem[] = [];
    const noteOf = (host: string, step: Step | TlsStep, into: Problem[]) => {
      const problem = this.results.get(host)?.notes.get(step);
      if (problem) into.push(problem);
    };
    for (const step of plan.steps) {
      if (step.kind === 'problem') steps.push(step.problem);
      else if (step.kind === 'route') noteOf(step.host, step, steps);
      else if (step.kind === 'canary') noteOf(step.host, step, canaries);
      else if (step.kind === 'fallback' || step.kind === 'snippet' || step.kind === 'clientAuth')
        for (const host of step.hosts) noteOf(host, step, steps);
    }
    for (const step of plan.tls) {
      if (step.kind === 'problem') tls.push(step.problem);
      else noteOf(step.host, step, tls);
    }
    return steps.length + canaries.length + tls.length === 0 ? NO_PROBLEMS : { steps, canaries, tls };
  }
}

/** claimedSecrets are the Secrets (namespace/name) a plan's TLS claims name. */
function* claimedSecrets(plan: IngressPlan): Iterable<string> {
  if (!plan.identified) return;
  for (const step of plan.tls)
    if (step.kind === 'claim' && step.secretName) yield `${plan.identified.namespace}/${step.secretName}`;
}
