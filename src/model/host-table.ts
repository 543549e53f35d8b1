/**
 * The hosts of a build, each worked out from just the Ingress plans that touch it. Conflicts
 * between Ingresses (who owns a path, a host's default backend, server-snippet, canary or TLS)
 * only ever arise within one host, so when a few plans change, only their hosts are worked out
 * again; every other host keeps its server and the problems it gave its plans. A fresh build is
 * the same work with every host new.
 */
import { HttpExtras, HttpExtrasTally } from './annotations/http-extras.js';
import { sameVariant, type Variant } from './annotations/apply.js';
import { compare, type UpstreamTable } from './backends.js';
import { CATCH_ALL, type IngressPlan, type OwnedRoute, type Step, type TlsStep } from './ingress-plan.js';
import { toLocations, type Route } from './locations.js';
import { sameItems } from './lookups.js';
import type { Certificate, ClientAuth, ErrorLocation, GlobalConfig, Problem, Server, SnippetDirective, Upstream } from './nginx-model.js';
import { Tally } from './tally.js';
import type { CertificateTable } from './tls.js';
import { show } from './validate.js';

/** HostContext is what working out a host needs besides the plans that touch it. */
export interface HostContext {
  readonly certificates: CertificateTable;
  /** the `/` of hosts no rule gives one */
  readonly fallback: Route;
  readonly config: GlobalConfig;
  /** the ConfigMap wants HSTS on TLS hosts */
  readonly hsts: boolean;
  /** plans in the order conflicts are settled in: oldest first, then namespace/name */
  readonly order: (a: IngressPlan, b: IngressPlan) => number;
}

/** HostResult is one host worked out: its server, and what it made of each step and TLS claim aimed at it. */
interface HostResult {
  readonly server: Server;
  readonly routes: readonly Route[];
  readonly tlsFile: string | null;
  readonly snippet: readonly SnippetDirective[] | null;
  readonly clientAuth: ClientAuth | null;
  /** the problem this host gave a step or TLS claim (a path someone else owns, say) */
  readonly notes: ReadonlyMap<Step | TlsStep, Problem>;
  /** the upstream names its locations proxy to */
  readonly proxied: readonly string[];
  /** a location of its server asks an auth service first (auth-url) */
  readonly externalAuth: boolean;
  /** the canary selectors of its routes */
  readonly canaries: HttpExtras;
  /** its own certificate, when that is not the default one */
  readonly certificate: Certificate | null;
}

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
  private readonly stepPlans = new Map<string, Set<IngressPlan>>();
  private readonly tlsPlans = new Map<string, Set<IngressPlan>>();
  private readonly results = new Map<string, HostResult>();
  private readonly planProblems = new Map<IngressPlan, PlanProblems>();
  private hostNames: string[] = [];
  private serverList: Server[] = [];
  private serversStale = true;
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
    const { added, removed } = diff(this.plans, plans);
    const dirty = new Set<string>(this.results.size === 0 ? [CATCH_ALL] : []);
    const touch = (plan: IngressPlan) => {
      for (const host of plan.stepsByHost.keys()) dirty.add(host);
      for (const host of plan.tlsHosts) dirty.add(host);
    };
    // Contributions are added before the old ones are taken back, so an unchanged key never leaves a tally.
    for (const plan of added) if (plan.identified) this.contribute(plan, +1, touch);
    for (const plan of removed) if (plan.identified) this.contribute(plan, -1, touch);
    if (secretsChanged === 'all') for (const host of this.tlsPlans.keys()) dirty.add(host);
    else if (secretsChanged.size > 0) for (const host of hostsNaming(plans, secretsChanged)) dirty.add(host);

    const recount = new Set<IngressPlan>(added.filter((p) => p.identified));
    for (const host of dirty) {
      const stepPlans = [...(this.stepPlans.get(host) ?? [])].sort(ctx.order);
      const tlsPlans = [...(this.tlsPlans.get(host) ?? [])].sort(ctx.order);
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
    for (const plan of removed) this.planProblems.delete(plan);
    for (const plan of recount) this.planProblems.set(plan, this.problemsOf(plan));
    this.plans = plans;
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
    if (this.serversStale) {
      this.serverList = this.hostNames.map((host) => this.results.get(host)!.server);
      this.serversStale = false;
    }
    return this.serverList;
  }

  /** problemsInto adds the plans' host-dependent problems in the order a build reports them: rules, canaries, TLS. */
  problemsInto(problems: Problem[]): void {
    const segments: PlanProblems[] = [];
    for (const plan of this.plans) {
      const segment = this.planProblems.get(plan);
      if (segment && segment !== NO_PROBLEMS) segments.push(segment);
    }
    for (const s of segments) problems.push(...s.steps);
    for (const s of segments) problems.push(...s.canaries);
    for (const s of segments) problems.push(...s.tls);
  }

  private contribute(plan: IngressPlan, sign: 1 | -1, touch: (plan: IngressPlan) => void): void {
    const index = (byHost: Map<string, Set<IngressPlan>>, hosts: Iterable<string>) => {
      for (const host of hosts) {
        let set = byHost.get(host);
        if (sign > 0) {
          if (!set) byHost.set(host, (set = new Set()));
          set.add(plan);
        } else if (set) {
          set.delete(plan);
          if (set.size === 0) byHost.delete(host);
        }
      }
    };
    index(this.stepPlans, plan.stepsByHost.keys());
    index(this.tlsPlans, plan.tlsHosts);
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
    if (result.server !== previous?.server) this.serversStale = true;
    for (const name of result.proxied) this.proxied.add(name, true);
    this.extras.add(result.canaries);
    if (result.certificate) this.certificates.add(result.certificate.id, result.certificate);
    if (result.externalAuth) this.externalAuthHosts.add(host, true);
    if (previous) this.release(host, previous);
    else {
      this.hostNames.splice(insertionPoint(this.hostNames, host), 0, host);
      this.serversStale = true;
    }
    this.results.set(host, result);
  }

  private dropHost(host: string, previous: HostResult): void {
    this.release(host, previous);
    this.results.delete(host);
    this.hostNames.splice(insertionPoint(this.hostNames, host), 1);
    this.serversStale = true;
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
      else if (step.kind === 'fallback' || step.kind === 'snippet' || step.kind === 'clientAuth') for (const host of step.hosts) noteOf(host, step, steps);
    }
    for (const step of plan.tls) {
      if (step.kind === 'problem') tls.push(step.problem);
      else noteOf(step.host, step, tls);
    }
    return steps.length + canaries.length + tls.length === 0 ? NO_PROBLEMS : { steps, canaries, tls };
  }
}

/** diff tells which plans came and went; lists of the same length are compared place by place first. */
function diff<T>(before: readonly T[], after: readonly T[]): { added: T[]; removed: T[] } {
  let [was, is]: [readonly T[], readonly T[]] = [before, after];
  if (before.length === after.length) {
    const changed = (list: readonly T[], other: readonly T[]) => list.filter((x, i) => x !== other[i]);
    [was, is] = [changed(before, after), changed(after, before)];
  }
  // A plan that only moved (another one's age changed) neither came nor went.
  const wasSet = new Set(was);
  const isSet = new Set(is);
  return { added: is.filter((x) => !wasSet.has(x)), removed: was.filter((x) => !isSet.has(x)) };
}

/** insertionPoint is where `host` stands or would stand in the sorted `hosts` (code-unit order, as compare). */
function insertionPoint(hosts: readonly string[], host: string): number {
  let [lo, hi] = [0, hosts.length];
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (hosts[mid]! < host) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** resolveHost settles one host: the oldest plan to claim a path, fallback, snippet, canary or TLS keeps it. */
function resolveHost(host: string, stepPlans: readonly IngressPlan[], tlsPlans: readonly IngressPlan[], ctx: HostContext, previous: HostResult | undefined): HostResult {
  const notes = new Map<Step | TlsStep, Problem>();
  const noter = (plan: IngressPlan) => {
    const { namespace, name } = plan.identified!;
    return (step: Step | TlsStep, field: string, message: string) => notes.set(step, { kind: 'Ingress', namespace, name, field, message });
  };
  const routes = new Map<string, OwnedRoute>();
  let fallback: Route | null = null;
  let snippet: { directives: readonly SnippetDirective[]; owner: string } | null = null;
  let clientAuth: { settings: ClientAuth; owner: string; secretId: string } | null = null;
  const canaryClaims: { note: ReturnType<typeof noter>; step: Extract<Step, { kind: 'canary' }> }[] = [];
  for (const plan of stepPlans) {
    const note = noter(plan);
    for (const step of plan.stepsByHost.get(host) ?? []) {
      if (step.kind === 'route') {
        const taken = routes.get(step.key);
        if (taken) note(step, `${step.field}.path`, `host ${show(host)} path ${show(step.route.path)} (${step.route.pathType}) is already served by Ingress ${taken.owner}; path left out`);
        else routes.set(step.key, step.route);
      } else if (step.kind === 'canary') canaryClaims.push({ note, step });
      else if (step.kind === 'fallback') {
        if (fallback === null) fallback = step.route;
        else if (host === CATCH_ALL) note(step, 'spec.defaultBackend', `the default backend is already set by Ingress ${fallback.ingress}; ignored`);
      } else if (step.kind === 'snippet') {
        if (snippet === null) snippet = { directives: step.directives, owner: plan.identified!.owner };
        else note(step, 'metadata.annotations.nginx.ingress.kubernetes.io/server-snippet', `host ${show(host)} already has the server-snippet of Ingress ${snippet.owner}; ignored there`);
      } else if (step.kind === 'clientAuth') {
        if (clientAuth === null) clientAuth = { settings: step.clientAuth, owner: plan.identified!.owner, secretId: step.secretId };
        else if (!sameClientAuth(clientAuth.settings, step.clientAuth)) {
          note(step, 'metadata.annotations.nginx.ingress.kubernetes.io/auth-tls-secret', `host ${show(host)} already has the client certificate check of Ingress ${clientAuth.owner} (Secret ${clientAuth.secretId}); that one applies here`);
        }
      }
    }
  }
  const canaries = attachCanaries(host, canaryClaims, routes);

  let tls: { certificate: Certificate; owner: string; secretName: string } | null = null;
  for (const plan of tlsPlans) {
    const note = noter(plan);
    const { namespace, owner } = plan.identified!;
    for (const step of plan.tls) {
      if (step.kind !== 'claim' || step.host !== host) continue;
      const secretName = step.secretName ?? '';
      if (tls) {
        if (tls.secretName !== secretName) note(step, `${step.field}.secretName`, `host ${show(host)} already has TLS from Ingress ${tls.owner} (Secret ${show(tls.secretName)}); ignored`);
        continue;
      }
      const certificate = ctx.certificates.forHost(namespace, step.secretName, host, step.field, (field, message) => note(step, field, message));
      tls = { certificate, owner, secretName };
    }
  }

  const list: Route[] = [...routes.values()];
  if (!list.some((r) => r.pathType === 'Prefix' && r.path === '/')) list.push(fallback ?? ctx.fallback);
  const tlsFile = tls?.certificate.file ?? null;
  const snippetLines = snippet?.directives ?? null;
  const defaultFile = ctx.certificates.defaultCertificate.file;
  const clientAuthSettings = clientAuth?.settings ?? null;
  const same =
    previous && previous.tlsFile === tlsFile && previous.snippet === snippetLines && previous.clientAuth === clientAuthSettings && sameItems(previous.routes, list);
  const server = same ? previous.server : makeServer(host, list, tlsFile, defaultFile, snippetLines, clientAuthSettings, ctx.config, ctx.hsts && tlsFile !== null);
  return {
    server,
    routes: list,
    tlsFile,
    snippet: snippetLines,
    clientAuth: clientAuthSettings,
    notes,
    proxied: same ? previous.proxied : proxiedBy(server),
    externalAuth: same ? previous.externalAuth : server.locations.some((l) => l.externalAuth !== null),
    canaries,
    certificate: tls && tls.certificate.file !== defaultFile ? tls.certificate : null,
  };
}

/** attachCanaries gives each canary route to the main route of the same path, one canary per route, oldest first. */
function attachCanaries(
  host: string,
  claims: readonly { note: (step: Step, field: string, message: string) => void; step: Extract<Step, { kind: 'canary' }> }[],
  routes: Map<string, OwnedRoute>,
): HttpExtras {
  const extras = new HttpExtras();
  for (const { note, step } of claims) {
    const main = routes.get(step.key);
    const rules = step.rules;
    if (!main || main.upstream === null) {
      note(step, `${step.field}.path`, `no Ingress serves host ${show(host)} path ${show(step.key.split(' ')[1])} with endpoints; canary ignored`);
    } else if (main.canary) {
      note(step, `${step.field}.path`, `the route already has a canary; ignored`);
    } else if (!rules.header && !rules.cookie && rules.weight === null) {
      note(step, 'metadata.annotations.nginx.ingress.kubernetes.io/canary', 'no canary-by-header, canary-by-cookie or canary-weight: no request would reach it; ignored');
    } else {
      const variable = extras.canary(`${host} ${step.key}`, main.upstream, step.upstream, rules);
      routes.set(step.key, { ...main, canary: { upstream: step.upstream, variable } });
    }
  }
  return extras;
}

/** proxiedBy lists the upstreams a server's locations proxy to (with their canaries) or render errors with. */
function proxiedBy(server: Server): string[] {
  const names = new Set<string>();
  for (const l of server.locations) {
    if (!l.pass) continue;
    if (l.upstream !== null) names.add(l.upstream);
    if (l.pass.canary !== null) names.add(l.pass.canary);
  }
  for (const e of server.errorLocations) names.add(e.upstream);
  return [...names];
}

/** serverNameFor gives nginx's server_name for a host; `*.foo.com` must match exactly one label. */
function serverNameFor(host: string): string {
  if (host === CATCH_ALL) return CATCH_ALL;
  if (!host.startsWith('*.')) return host;
  return `~^[^.]+${host.slice(1).replaceAll('.', '\\.')}$`;
}

function makeServer(
  host: string,
  routes: readonly Route[],
  /** the host's own certificate (TLS), which may be the default one when its Secret is unusable */
  tlsFile: string | null,
  defaultFile: string,
  snippet: readonly SnippetDirective[] | null,
  clientAuth: ClientAuth | null,
  config: GlobalConfig,
  serverHsts: boolean,
): Server {
  const certificateFile = tlsFile ?? defaultFile;
  const locations = toLocations(routes, { tls: tlsFile !== null, sslRedirect: config.sslRedirect, forceSslRedirect: config.forceSslRedirect, hsts: serverHsts });
  const errors = new Map<string, ErrorLocation>();
  for (const page of locations.flatMap((l) => l.errorPages ?? [])) errors.set(page.name, page);
  return {
    host,
    serverName: serverNameFor(host),
    isDefault: host === CATCH_ALL,
    certificateFile,
    inheritsCertificate: certificateFile === defaultFile,
    ingresses: [...new Set(routes.flatMap((r) => (r.ingress ? [r.ingress] : [])))].sort(compare),
    locations,
    hsts: serverHsts,
    snippet,
    errorLocations: [...errors.values()].sort((a, b) => compare(a.name, b.name)),
    clientAuth,
  };
}

/** sameClientAuth says whether two auth-tls settings make the same server directives. */
function sameClientAuth(a: ClientAuth, b: ClientAuth): boolean {
  return a.caFile === b.caFile && a.verifyClient === b.verifyClient && a.depth === b.depth && a.errorPage === b.errorPage;
}

/** hostsNaming lists the hosts whose TLS claims, in `plans`, name one of `secrets` (namespace/name). */
function* hostsNaming(plans: readonly IngressPlan[], secrets: ReadonlySet<string>): Iterable<string> {
  for (const plan of plans) {
    if (!plan.identified) continue;
    for (const step of plan.tls) if (step.kind === 'claim' && step.secretName && secrets.has(`${plan.identified.namespace}/${step.secretName}`)) yield step.host;
  }
}
