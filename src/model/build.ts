import { BuiltUpstreams, UpstreamTable, compare, type Report, type Resolved } from './backends.js';
import { UpstreamVariants, type KeptUpstreams } from './annotations/apply.js';
import { HttpExtras } from './annotations/http-extras.js';
import { filesDigest } from './files-digest.js';
import { fitServerNameHash, readConfigMap } from './config-map.js';
import { isOurs, type ClassOptions } from './ingress-class.js';
import { CATCH_ALL, firstPort, planIngress, type IngressPlan, type OwnedRoute } from './ingress-plan.js';
import { toLocations, type Route } from './locations.js';
import { Lookups, sameItems, TrackedReads } from './lookups.js';
import type { BuildResult, ErrorLocation, GlobalConfig, NginxModel, Problem, Server, Upstream } from './nginx-model.js';
import type { ConfigMap as ConfigMapObject, Ingress, IngressClass, Snapshot } from './snapshot.js';
import { CertificateTable, type CheckedSecrets } from './tls.js';
import { checkDnsLabel, checkHost, show } from './validate.js';
/** BuildOptions are the controller flags buildModel depends on. */
export interface BuildOptions extends ClassOptions {
  /** `--configmap ns/name` */
  readonly configMap?: string;
  /** `--default-ssl-certificate ns/name` */
  readonly defaultSslCertificate?: string;
  /** `--default-backend-service ns/name`: unknown hosts and unmatched paths go there instead of a 404 */
  readonly defaultBackendService?: string;
  readonly httpPort: number;
  readonly httpsPort: number;
}

/** defaultBuildOptions are ingress-nginx's flag defaults. */
export const defaultBuildOptions: BuildOptions = Object.freeze({
  ingressClass: 'nginx',
  controllerClass: 'k8s.io/ingress-nginx',
  watchIngressWithoutClass: false,
  httpPort: 80,
  httpsPort: 443,
});

export { CATCH_ALL };

interface HostDraft {
  readonly routes: Map<string, OwnedRoute>;
  /** the `/` an Ingress's defaultBackend gives its hosts when no rule claims it */
  fallback: Route | null;
  tls: { file: string; owner: string; secretName: string } | null;
  snippet: { lines: readonly string[]; owner: string } | null;
}

/** What a server was made from, to tell whether the next build may reuse it. */
interface ServerInputs {
  readonly routes: readonly Route[];
  readonly tlsFile: string | null;
  readonly snippet: readonly string[] | null;
  readonly server: Server;
}

/** The inputs every plan and server depends on; when one changes, nothing is reused. */
interface Globals {
  readonly options: BuildOptions;
  readonly configMap: ConfigMapObject | undefined;
  readonly config: GlobalConfig;
  readonly configProblems: readonly Problem[];
}

/**
 * BuildMemo carries what one build can lend the next: Ingress plans, upstreams and certificate
 * verdicts keyed by the objects they came from (the caches replace an object on change, never
 * mutate it), and servers keyed by their host and inputs. A build with a memo gives exactly
 * the result of a build without one (test/property/incremental.test.ts checks it); it is only faster.
 */
export class BuildMemo {
  plans = new WeakMap<Ingress, IngressPlan>();
  readonly built = new BuiltUpstreams();
  readonly verdicts: CheckedSecrets = new WeakMap();
  servers = new Map<string, ServerInputs>();
  readonly upstreams: KeptUpstreams = { last: new Map() };
  /** creation times, parsed once per Ingress object for the age order */
  readonly ages = new WeakMap<Ingress, number>();
  globals: Globals | null = null;
  /** the `/` of hosts no rule gives one, kept while the default backend is the same so their servers can be reused */
  fallback: Route | null = null;
  lookups: Lookups | undefined = undefined;
}

function millis(t: string | Date | undefined): number {
  if (t === undefined) return 0;
  const ms = t instanceof Date ? t.getTime() : Date.parse(t);
  return Number.isNaN(ms) ? 0 : ms;
}

/** byAge orders Ingresses as ingress-nginx resolves conflicts: oldest first, then namespace/name. */
function byAge(a: Ingress, b: Ingress, age: (i: Ingress) => number): number {
  return (
    age(a) - age(b) ||
    compare(a.metadata?.namespace ?? '', b.metadata?.namespace ?? '') ||
    compare(a.metadata?.name ?? '', b.metadata?.name ?? '')
  );
}

/** serverNameFor gives nginx's server_name for a host; `*.foo.com` must match exactly one label. */
function serverNameFor(host: string): string {
  if (host === CATCH_ALL) return CATCH_ALL;
  if (!host.startsWith('*.')) return host;
  return `~^[^.]+${host.slice(1).replaceAll('.', '\\.')}$`;
}

function hstsHeader(config: GlobalConfig): string | null {
  if (!config.hsts) return null;
  return [`max-age=${config.hstsMaxAge}`, ...(config.hstsIncludeSubdomains ? ['includeSubDomains'] : []), ...(config.hstsPreload ? ['preload'] : [])].join('; ');
}

/**
 * buildModel turns a Snapshot into the nginx model and the problems found on the way. It is
 * pure: the same snapshot and options always give the same model, in the same order. Every
 * string that reaches the model has passed a validator for its field; what fails is left out
 * (the rule, the path, the TLS entry, or the Ingress whose annotations are invalid) and
 * reported, and the rest is still served. With a `memo` from the previous build, only what
 * changed is worked out again.
 */
export function buildModel(snapshot: Snapshot, options: BuildOptions = defaultBuildOptions, memo: BuildMemo = new BuildMemo()): BuildResult {
  const problems: Problem[] = [];
  const lookups = new Lookups(snapshot, memo.lookups);
  memo.lookups = lookups;
  const configMap = options.configMap
    ? snapshot.configMaps.find((c) => `${c.metadata?.namespace}/${c.metadata?.name}` === options.configMap)
    : undefined;
  const globals = globalsFor(memo, options, configMap);
  const baseConfig = globals.config;
  problems.push(...globals.configProblems);

  const classes = new Map<string, IngressClass>();
  for (const c of snapshot.ingressClasses) if (c.metadata?.name) classes.set(c.metadata.name, c);
  const certificates = new CertificateTable(lookups, options.defaultSslCertificate, problems, memo.verdicts);
  const { resolved: defaultBackend, table: defaultTable } = resolveDefaultBackend(options.defaultBackendService, lookups, memo.built, problems);
  const fallback = fallbackUnder(memo, globals, defaultBackend);

  const age = (i: Ingress) => {
    let ms = memo.ages.get(i);
    if (ms === undefined) memo.ages.set(i, (ms = millis(i.metadata?.creationTimestamp)));
    return ms;
  };
  const ours = snapshot.ingresses.filter((i) => isOurs(i, classes, options)).sort((a, b) => byAge(a, b, age));
  const planContext = { config: baseConfig, lookups, built: memo.built, defaultBackendUpstream: defaultBackend.upstream };
  const plans = ours.map((ingress) => {
    const known = memo.plans.get(ingress);
    if (known && known.reads.unchangedIn(lookups)) return known;
    const plan = planIngress(ingress, planContext);
    memo.plans.set(ingress, plan);
    return plan;
  });

  const hosts = new Map<string, HostDraft>();
  const draft = (host: string): HostDraft => {
    let d = hosts.get(host);
    if (!d) hosts.set(host, (d = { routes: new Map(), fallback: null, tls: null, snippet: null }));
    return d;
  };
  draft(CATCH_ALL);
  const extras = new HttpExtras();
  const variants = new UpstreamVariants(baseConfig, lookups.services);
  const usedUpstreams = new Map<string, Upstream>();
  const sliceProblems = new Map<string, Problem>();
  defaultTable?.usedInto(usedUpstreams);
  defaultTable?.sliceProblemsInto(sliceProblems);
  for (const plan of plans) problems.push(...plan.identifyProblems);
  // Every Ingress's rules first, oldest first, so TLS can find a host whichever Ingress brought it.
  const canaries: CanaryClaim[] = [];
  for (const plan of plans) {
    if (!plan.identified) continue;
    applySteps(plan, draft, problems, canaries);
    extras.absorb(plan.extras);
    variants.absorb(plan.variants);
    plan.upstreams.usedInto(usedUpstreams);
    plan.upstreams.sliceProblemsInto(sliceProblems);
  }
  attachCanaries(canaries, hosts, extras, problems);
  for (const plan of plans) if (plan.identified && !plan.identified.annotations.canary) addTls(plan, hosts, certificates, problems);

  const defaultFile = certificates.defaultCertificate.file;
  const hsts = hstsHeader(baseConfig);
  const previousServers = memo.servers;
  memo.servers = new Map();
  // The default sort compares UTF-16 code units, as compare does, without a call per comparison.
  const servers: Server[] = [...hosts.keys()]
    .sort()
    .map((host) => {
      const d = hosts.get(host)!;
      const routes: Route[] = [...d.routes.values()];
      if (!routes.some((r) => r.pathType === 'Prefix' && r.path === '/')) routes.push(d.fallback ?? fallback);
      const tlsFile = d.tls?.file ?? null;
      const snippet = d.snippet?.lines ?? null;
      const known = previousServers.get(host);
      const server =
        known && known.tlsFile === tlsFile && known.snippet === snippet && sameItems(known.routes, routes)
          ? known.server
          : makeServer(host, routes, tlsFile, defaultFile, snippet, baseConfig, hsts !== null && tlsFile !== null);
      memo.servers.set(host, { routes, tlsFile, snippet, server });
      return server;
    });
  memo.built.nextGeneration();
  problems.push(...[...sliceProblems.entries()].sort(([a], [b]) => compare(a, b)).map(([, problem]) => problem));

  // Only what a location proxies to (with its canary) or renders errors with.
  const proxied = new Set<string | null>();
  for (const s of servers) {
    for (const l of s.locations) if (l.pass) proxied.add(l.upstream).add(l.pass.canary);
    for (const e of s.errorLocations) proxied.add(e.upstream);
  }
  const defaultServer = servers.find((s) => s.isDefault)!;
  const named = servers.filter((s) => !s.isDefault);
  const http = extras.model();
  const files = [...certificates.certificates(), ...http.files];
  const model: NginxModel = {
    httpPort: options.httpPort,
    httpsPort: options.httpsPort,
    httpsRedirect: `https://$host${options.httpsPort === 443 ? '' : `:${options.httpsPort}`}$request_uri`,
    // Regex names (the wildcards) are not in nginx's server_names hash; only exact names count.
    config: fitServerNameHash(baseConfig, named.filter((s) => !s.host.startsWith('*.')).map((s) => s.serverName)),
    hstsHeader: hsts,
    proxyHeaders: { host: '$best_http_host' },
    requestZones: http.requestZones,
    connectionZones: http.connectionZones,
    maps: http.maps,
    canaries: http.canaries,
    defaultServer,
    servers: named,
    defaultCertificateFile: defaultFile,
    // A defaultBackend that lost to a rule writes no upstream.
    upstreams: variants.build(usedUpstreams, proxied, problems, memo.upstreams),
    certificates: files,
    filesDigest: filesDigest(files),
  };
  return { model, problems };
}

/** globalsFor reads the ConfigMap, or takes the previous build's reading when the ConfigMap and flags are the same objects. */
function globalsFor(memo: BuildMemo, options: BuildOptions, configMap: ConfigMapObject | undefined): Globals {
  const known = memo.globals;
  if (known && known.options === options && known.configMap === configMap) return known;
  const { config, problems } = readConfigMap(configMap);
  return { options, configMap, config, configProblems: problems };
}

/**
 * fallbackUnder gives the route of hosts no rule gives a `/`: the previous build's object while
 * the globals and the default backend are the same. Otherwise every plan and server the memo
 * holds was made under other settings, and is dropped.
 */
function fallbackUnder(memo: BuildMemo, globals: Globals, defaultBackend: DefaultBackend): Route {
  const known = memo.fallback;
  const same = memo.globals === globals && known !== null && known.upstream === defaultBackend.upstream && known.status === defaultBackend.status;
  memo.globals = globals;
  if (same) return known;
  memo.plans = new WeakMap();
  memo.servers = new Map();
  return (memo.fallback = { path: '/', pathType: 'Prefix', ...defaultBackend, ingress: null, features: null });
}

function makeServer(
  host: string,
  routes: readonly Route[],
  /** the host's own certificate (TLS), which may be the default one when its Secret is unusable */
  tlsFile: string | null,
  defaultFile: string,
  snippet: readonly string[] | null,
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
  };
}

type DefaultBackend = Resolved | { upstream: null; status: 404 };

/** resolveDefaultBackend resolves --default-backend-service; its table holds the upstream for the model. */
function resolveDefaultBackend(flag: string | undefined, lookups: Lookups, built: BuiltUpstreams, problems: Problem[]): { resolved: DefaultBackend; table: UpstreamTable | null } {
  if (!flag) return { resolved: { upstream: null, status: 404 }, table: null };
  const [namespace = '', name = ''] = flag.split('/');
  const report: Report = (field, message) => problems.push({ kind: 'Service', namespace, name, field: `--default-backend-service (${field})`, message });
  const reads = new TrackedReads(lookups);
  const backend = checkDnsLabel(namespace).ok && checkDnsLabel(name).ok ? firstPort(reads, namespace, name) : null;
  if (!backend) {
    report('service', `Service ${show(flag)} not found or without ports; unknown hosts get 404`);
    return { resolved: { upstream: null, status: 404 }, table: null };
  }
  const table = new UpstreamTable(reads, built);
  return { resolved: table.resolve(namespace, backend, 'service', report), table };
}

/** CanaryClaim is a canary Ingress's route, attached to its main route once every rule is in. */
interface CanaryClaim {
  readonly plan: IngressPlan;
  readonly step: Extract<IngressPlan['steps'][number], { kind: 'canary' }>;
}

/** applySteps lays one plan over the hosts: the first Ingress (oldest) to claim a path, a fallback or a server-snippet keeps it. */
function applySteps(plan: IngressPlan, draft: (host: string) => HostDraft, problems: Problem[], canaries: CanaryClaim[]): void {
  const { namespace, name, owner } = plan.identified!;
  const report: Report = (field, message) => problems.push({ kind: 'Ingress', namespace, name, field, message });
  for (const step of plan.steps) {
    switch (step.kind) {
      case 'problem':
        problems.push(step.problem);
        break;
      case 'host':
        draft(step.host);
        break;
      case 'route': {
        const d = draft(step.host);
        const taken = d.routes.get(step.key);
        if (taken) {
          report(`${step.field}.path`, `host ${show(step.host)} path ${show(step.route.path)} (${step.route.pathType}) is already served by Ingress ${taken.owner}; path left out`);
        } else d.routes.set(step.key, step.route);
        break;
      }
      case 'canary':
        canaries.push({ plan, step });
        break;
      case 'fallback':
        for (const host of step.hosts) {
          const d = draft(host);
          if (d.fallback === null) d.fallback = step.route;
          else if (host === CATCH_ALL) report('spec.defaultBackend', `the default backend is already set by Ingress ${d.fallback.ingress}; ignored`);
        }
        break;
      case 'snippet':
        for (const host of step.hosts) {
          const d = draft(host);
          if (d.snippet === null) d.snippet = { lines: step.lines, owner };
          else report('metadata.annotations.nginx.ingress.kubernetes.io/server-snippet', `host ${show(host)} already has the server-snippet of Ingress ${d.snippet.owner}; ignored there`);
        }
        break;
    }
  }
}

/** attachCanaries gives each canary route to the main route of the same host and path, one canary per route. */
function attachCanaries(canaries: readonly CanaryClaim[], hosts: ReadonlyMap<string, HostDraft>, extras: HttpExtras, problems: Problem[]): void {
  for (const { plan, step } of canaries) {
    const { namespace, name } = plan.identified!;
    const report: Report = (field, message) => problems.push({ kind: 'Ingress', namespace, name, field, message });
    const d = hosts.get(step.host);
    const main = d?.routes.get(step.key);
    const rules = step.rules;
    if (!main || main.upstream === null) {
      report(`${step.field}.path`, `no Ingress serves host ${show(step.host)} path ${show(step.key.split(' ')[1])} with endpoints; canary ignored`);
      continue;
    }
    if (main.canary) {
      report(`${step.field}.path`, `the route already has a canary; ignored`);
      continue;
    }
    if (!rules.header && !rules.cookie && rules.weight === null) {
      report('metadata.annotations.nginx.ingress.kubernetes.io/canary', 'no canary-by-header, canary-by-cookie or canary-weight: no request would reach it; ignored');
      continue;
    }
    const variable = extras.canary(`${step.host} ${step.key}`, main.upstream, step.upstream, rules);
    d!.routes.set(step.key, { ...main, canary: { upstream: step.upstream, variable } });
  }
}

function addTls(plan: IngressPlan, hosts: ReadonlyMap<string, HostDraft>, certificates: CertificateTable, problems: Problem[]): void {
  const { ingress, namespace: ns, name, owner } = plan.identified!;
  const report: Report = (field, message) => problems.push({ kind: 'Ingress', namespace: ns, name, field, message });
  for (const [i, tls] of (ingress.spec?.tls ?? []).entries()) {
    for (const [j, rawHost] of (tls.hosts ?? []).entries()) {
      const field = `spec.tls[${i}]`;
      const host = checkHost(rawHost);
      if (!host.ok) {
        report(`${field}.hosts[${j}]`, `${host.message}; TLS entry left out`);
        continue;
      }
      const d = hosts.get(host.value);
      if (!d) continue; // TLS for a host no rule serves: nothing to terminate
      const secretName = tls.secretName ?? '';
      if (d.tls) {
        if (d.tls.secretName !== secretName) {
          report(`${field}.secretName`, `host ${show(host.value)} already has TLS from Ingress ${d.tls.owner} (Secret ${show(d.tls.secretName)}); ignored`);
        }
        continue;
      }
      const file = certificates.forHost(ns, tls.secretName, host.value, field, report);
      d.tls = { file, owner, secretName };
    }
  }
}
