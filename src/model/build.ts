import { BuiltUpstreams, UpstreamTable, compare, type Report, type Resolved } from './backends.js';
import { balancedUpstreams, type KeptUpstreams } from './annotations/apply.js';
import { filesDigest } from './files-digest.js';
import { fitServerNameHash, readConfigMap } from './config-map.js';
import { HostTable, type HostContext } from './host-table.js';
import { isOurs, type ClassOptions } from './ingress-class.js';
import { CATCH_ALL, firstPort, planIngress, type IngressPlan } from './ingress-plan.js';
import { DEFAULT_PROXY_HOST, type Route } from './locations.js';
import { Lookups, sameItems, TrackedReads } from './lookups.js';
import type { BalancedUpstream, BuildResult, Certificate, GlobalConfig, NginxModel, Problem, Server } from './nginx-model.js';
import type { ConfigMap as ConfigMapObject, Ingress, IngressClass, Snapshot } from './snapshot.js';
import { CertificateTable, type CheckedSecrets } from './tls.js';
import { checkDnsLabel, checkIp, show } from './validate.js';
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
  /** the one IP nginx listens on (the demo's 127.0.0.1); all addresses when absent, as ingress-nginx */
  readonly listenAddress?: string;
  /** nameservers nginx asks for names it looks up at run time (auth-url): IP addresses, from /etc/resolv.conf */
  readonly resolvers?: readonly string[];
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
 * mutate it), and the hosts worked out from those plans. A build with a memo gives exactly the
 * result of a build without one (test/property/incremental.test.ts checks it); it is only faster.
 */
export class BuildMemo {
  /** each Ingress's plan, and the last build whose objects it was checked against */
  plans = new WeakMap<Ingress, { readonly plan: IngressPlan; checkedIn: Lookups }>();
  readonly built = new BuiltUpstreams();
  readonly verdicts: CheckedSecrets = new WeakMap();
  hosts = new HostTable();
  readonly upstreams: KeptUpstreams = { last: new Map() };
  /** creation times, parsed once per Ingress object for the age order */
  readonly ages = new WeakMap<Ingress, number>();
  globals: Globals | null = null;
  /** the `/` of hosts no rule gives one, kept while the default backend is the same so their servers can be reused */
  fallback: Route | null = null;
  lookups: Lookups | undefined = undefined;
  /** the Ingresses of the last build that are ours, in age order, and what decided that */
  ours: { readonly from: readonly Ingress[]; readonly classes: readonly IngressClass[]; readonly options: BuildOptions; readonly list: readonly Ingress[] } | null = null;
  /** the last build's servers split into the catch-all and the named ones, and the config fitted to their names */
  view: {
    readonly servers: readonly Server[];
    readonly baseConfig: GlobalConfig;
    readonly defaultServer: Server;
    readonly named: readonly Server[];
    readonly config: GlobalConfig;
  } | null = null;
  /** the last upstream list, and the tally versions it was made at */
  balanced: { readonly key: string; readonly services: Lookups['services']; readonly upstreams: readonly BalancedUpstream[]; readonly problems: readonly Problem[] } | null = null;
  /** the last certificates (and with the htpasswd files, all files) and their digest, and the tally version they were made at */
  files: {
    readonly key: number;
    readonly defaultCertificate: Certificate;
    readonly certs: readonly Certificate[];
    readonly list: readonly Certificate[];
    readonly digest: string;
  } | null = null;
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
 * changed is worked out again: the plans of changed Ingresses and the hosts they touch.
 */
export function buildModel(snapshot: Snapshot, options: BuildOptions = defaultBuildOptions, memo: BuildMemo = new BuildMemo()): BuildResult {
  const problems: Problem[] = [];
  const previousLookups = memo.lookups;
  const lookups = new Lookups(snapshot, previousLookups);
  memo.lookups = lookups;
  const configMap = options.configMap
    ? snapshot.configMaps.find((c) => `${c.metadata?.namespace}/${c.metadata?.name}` === options.configMap)
    : undefined;
  const globals = globalsFor(memo, options, configMap);
  const baseConfig = globals.config;
  problems.push(...globals.configProblems);

  const certificates = new CertificateTable(lookups, options.defaultSslCertificate, problems, memo.verdicts);
  const { resolved: defaultBackend, table: defaultTable } = resolveDefaultBackend(options.defaultBackendService, lookups, memo.built, problems);
  const fallback = fallbackUnder(memo, globals, defaultBackend);

  const age = (i: Ingress) => {
    let ms = memo.ages.get(i);
    if (ms === undefined) memo.ages.set(i, (ms = millis(i.metadata?.creationTimestamp)));
    return ms;
  };
  const ours = oursInAgeOrder(snapshot, options, memo, age);
  // A plan holds while every object it read is the same. For the plans the last build checked:
  // when no Service or EndpointSlice changed since, only the Secrets they read need a look.
  const secretsChanged = previousLookups === undefined ? null : lookups.changedSecrets(previousLookups);
  const onlySecretsMoved = previousLookups !== undefined && lookups.services === previousLookups.services && lookups.slices === previousLookups.slices;
  const holds = (known: { plan: IngressPlan; checkedIn: Lookups }) =>
    onlySecretsMoved && known.checkedIn === previousLookups ? !known.plan.reads.readAnySecretOf(secretsChanged!) : known.plan.reads.unchangedIn(lookups);
  const planContext = { config: baseConfig, lookups, built: memo.built, defaultBackendUpstream: defaultBackend.upstream };
  const plans = ours.map((ingress) => {
    const known = memo.plans.get(ingress);
    if (known && holds(known)) {
      known.checkedIn = lookups;
      return known.plan;
    }
    const plan = planIngress(ingress, planContext);
    memo.plans.set(ingress, { plan, checkedIn: lookups });
    return plan;
  });
  for (const plan of plans) if (plan.identifyProblems.length > 0) problems.push(...plan.identifyProblems);

  const hosts = memo.hosts;
  const hsts = hstsHeader(baseConfig);
  const hostContext: HostContext = { certificates, fallback, config: baseConfig, hsts: hsts !== null, order: (a, b) => byAge(a.identified!.ingress, b.identified!.ingress, age) };
  // Any TLS host may fall back to the default certificate: its Secret changing touches them all.
  const defaultChanged = secretsChanged === null || (options.defaultSslCertificate !== undefined && secretsChanged.has(options.defaultSslCertificate));
  hosts.update(plans, hostContext, defaultChanged ? 'all' : secretsChanged);
  hosts.countDefaultBackend(defaultTable);
  hosts.problemsInto(problems);
  problems.push(...[...hosts.sliceProblems.keys()].sort().map((key) => hosts.sliceProblems.get(key)!));

  const { defaultServer, named, config } = serversView(memo, hosts.servers(), baseConfig);
  const http = hosts.extras.model();
  const balanced = upstreamsOf(memo, baseConfig, lookups);
  problems.push(...balanced.problems);
  const files = certificateFiles(memo, certificates, http.files);
  const model: NginxModel = {
    httpPort: options.httpPort,
    httpsPort: options.httpsPort,
    httpsRedirect: `https://$host${options.httpsPort === 443 ? '' : `:${options.httpsPort}`}$request_uri`,
    listen: listenOf(options),
    config,
    hstsHeader: hsts,
    // Only auth-url needs these: without it the file does not depend on the machine's nameservers.
    externalAuth: hosts.externalAuthHosts.size > 0 ? { resolvers: options.resolvers ?? [] } : null,
    proxyHeaders: { host: DEFAULT_PROXY_HOST },
    requestZones: http.requestZones,
    connectionZones: http.connectionZones,
    maps: http.maps,
    canaries: http.canaries,
    defaultServer,
    servers: named,
    defaultCertificateFile: certificates.defaultCertificate.file,
    // Only what a location proxies to (with its canary) or renders errors with: a defaultBackend that lost to a rule writes no upstream.
    upstreams: balanced.upstreams,
    certificates: files.list,
    filesDigest: files.digest,
  };
  return { model, problems };
}

/** listenOf spells the listen addresses of `listenAddress` (IPv6 in brackets), or null for all addresses. */
function listenOf(options: BuildOptions): NginxModel['listen'] {
  if (options.listenAddress === undefined) return null;
  const ip = checkIp(options.listenAddress);
  // A build option, not a Kubernetes value: a wrong one is the caller's bug, and nginx must not listen wider than asked.
  if (!ip.ok) throw new RangeError(`listenAddress: ${ip.message}`);
  const host = ip.value.family === 6 ? `[${ip.value.address}]` : ip.value.address;
  return { http: `${host}:${options.httpPort}`, https: `${host}:${options.httpsPort}` };
}

/**
 * oursInAgeOrder gives the Ingresses this controller serves, oldest first (then namespace/name),
 * as ingress-nginx settles conflicts. When the only change since the last build is Ingresses
 * replaced in place (same name, age and class verdict), the last order holds with them swapped in.
 */
function oursInAgeOrder(snapshot: Snapshot, options: BuildOptions, memo: BuildMemo, age: (i: Ingress) => number): readonly Ingress[] {
  const from = snapshot.ingresses;
  const classes = snapshot.ingressClasses;
  const known = memo.ours;
  if (known && known.from === from && known.classes === classes && known.options === options) return known.list;
  const byName = new Map<string, IngressClass>();
  for (const c of classes) if (c.metadata?.name) byName.set(c.metadata.name, c);
  const ours = (i: Ingress) => isOurs(i, byName, options);
  let list = known && known.classes === classes && known.options === options ? swappedIn(known.list, known.from, from, ours, age) : null;
  list ??= from.filter(ours).sort((a, b) => byAge(a, b, age));
  memo.ours = { from, classes, options, list };
  return list;
}

/** swappedIn is `list` with the Ingresses `after` replaced in place, or null when anything else changed. */
function swappedIn(list: readonly Ingress[], before: readonly Ingress[], after: readonly Ingress[], ours: (i: Ingress) => boolean, age: (i: Ingress) => number): Ingress[] | null {
  if (before.length !== after.length) return null;
  let out: Ingress[] | null = null;
  for (let i = 0; i < after.length; i++) {
    const [was, is] = [before[i]!, after[i]!];
    if (was === is) continue;
    const sameSlot = was.metadata?.namespace === is.metadata?.namespace && was.metadata?.name === is.metadata?.name && age(was) === age(is);
    const wasOurs = ours(was);
    if (!sameSlot || wasOurs !== ours(is)) return null;
    if (!wasOurs) continue;
    out ??= [...list];
    const at = out.indexOf(was);
    if (at < 0) return null;
    out[at] = is;
  }
  return out ?? [...list];
}

/** serversView splits the servers into the catch-all and the named ones, and fits the server_names hash to the names. */
function serversView(memo: BuildMemo, servers: readonly Server[], baseConfig: GlobalConfig): NonNullable<BuildMemo['view']> {
  if (memo.view && memo.view.servers === servers && memo.view.baseConfig === baseConfig) return memo.view;
  const named = servers.filter((s) => !s.isDefault);
  // Regex names (the wildcards) are not in nginx's server_names hash; only exact names count.
  const config = fitServerNameHash(baseConfig, named.filter((s) => !s.host.startsWith('*.')).map((s) => s.serverName));
  memo.view = { servers, baseConfig, defaultServer: servers.find((s) => s.isDefault)!, named, config };
  return memo.view;
}

/** upstreamsOf gives the upstreams the servers proxy to, the last build's list while nothing they are made from changed. */
function upstreamsOf(memo: BuildMemo, config: GlobalConfig, lookups: Lookups): { upstreams: readonly BalancedUpstream[]; problems: readonly Problem[] } {
  const { hosts } = memo;
  // Services matter too, for service-upstream (ClusterIP) variants; a new config resets the whole memo.
  const key = `${hosts.proxied.version}/${hosts.variants.version}/${hosts.used.version}`;
  if (memo.balanced && memo.balanced.key === key && memo.balanced.services === lookups.services) return memo.balanced;
  const problems: Problem[] = [];
  const names = [...hosts.proxied.keys()].sort();
  const upstreams = balancedUpstreams(
    { names, variant: (n) => hosts.variants.get(n), base: (n) => hosts.used.get(n), config, services: lookups.services },
    problems,
    memo.upstreams,
  );
  memo.built.retain((name) => hosts.used.has(name));
  memo.balanced = { key, services: lookups.services, upstreams, problems };
  return memo.balanced;
}

/** certificateFiles lists the files nginx.conf names (certificates, then htpasswd files) with their digest, kept while they are the same. */
function certificateFiles(memo: BuildMemo, certificates: CertificateTable, httpFiles: readonly Certificate[]): { list: readonly Certificate[]; digest: string } {
  const key = memo.hosts.certificates.version;
  const { defaultCertificate } = certificates;
  const known = memo.files;
  // The default certificate is made anew by every build: the same one has the same id and content.
  const sameDefault = known !== null && known.defaultCertificate.id === defaultCertificate.id && known.defaultCertificate.pem === defaultCertificate.pem;
  const certs = known && known.key === key && sameDefault ? known.certs : certificates.certificates(memo.hosts.certificates.values());
  const list = httpFiles.length === 0 ? certs : [...certs, ...httpFiles];
  const digest = known && sameItems(known.list, list) ? known.digest : filesDigest(list);
  memo.files = { key, defaultCertificate, certs, list, digest };
  return memo.files;
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
  memo.hosts = new HostTable();
  memo.balanced = null;
  memo.files = null;
  return (memo.fallback = { path: '/', pathType: 'Prefix', ...defaultBackend, ingress: null, features: null });
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
