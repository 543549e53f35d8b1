/**
 * buildModel, as a pipeline: the globals (ConfigMap, flags, default certificate and backend),
 * the Ingresses that are ours (class filtering, age order), their plans, the hosts settled from
 * the plans, the upstreams the servers proxy to, the files nginx.conf names, and the model.
 * Each step is a function below, in that order; what a step can reuse from the last build is
 * decided in src/model/incremental/.
 */
import { type BuiltUpstreams, compare, UpstreamTable, type Report } from './backends.js';
import { filesDigest } from './files-digest.js';
import { lowerBound } from './sorted.js';
import { globalExtras } from './global-extras.js';
import { httpWaf } from './waf.js';
import { uriEscape } from './escape-uri.js';
import type { HostContext } from './host-rules.js';
import type { HostTable } from './incremental/host-table.js';
import type { Balanced } from './incremental/balanced.js';
import { listChange, tellChange } from './incremental/list-diff.js';
import { BuildMemo, forgetAllUnlessSameSettings, globalsFor, type DefaultTarget } from './incremental/memo.js';
import { changesSince, reusedOrNewPlans, secretsToResettle, type Changes } from './incremental/reuse.js';
import { byAge } from './ingress-age.js';
import { isOurs } from './ingress-class.js';
import { CATCH_ALL, firstPort, type IngressPlan } from './ingress-plan.js';
import { DEFAULT_PROXY_HOST, type Route } from './locations.js';
import { Lookups, sameItems, TrackedReads } from './lookups.js';
import type {
  BalancedUpstream,
  Certificate,
  GlobalConfig,
  NginxModel,
  Problem,
  Server,
  Tracing,
} from './nginx-model.js';
import type { NginxModules } from './machine-settings.js';
import { defaultBuildOptions, type BuildOptions, type BuildResult } from './build-types.js';
import type { Ingress, IngressClass, Snapshot } from './snapshot.js';
import { buildGatewayRoutes } from './gateway/build.js';
import type { GatewayRoutes } from './gateway/routes.js';
import type { Condition } from './gateway/types.js';
import { gatewayInputOf } from './gateway/input.js';
import { gatewayModel } from './gateway/nginx.js';
import { backendTls } from './gateway/backend-tls.js';
import { reuseGateway } from './gateway/reuse.js';
import { buildStream, DEFAULT_STREAM_SETTINGS } from './stream.js';
import { gatewayStream } from './gateway/nginx-stream.js';
import { gatewaySecretKeys } from './gateway/secret-refs.js';
import { terminateCertificates } from './gateway/tls-terminate.js';
import { CertificateTable } from './tls.js';
import { checkDnsLabel, checkIp, show } from './validate.js';

export { CATCH_ALL, BuildMemo };
export { secretsRead, type SecretsRead } from './incremental/secrets-read.js';

/** The Ingress default server is default_server on both ports (no Gateway catch-all there). */
const NO_GATEWAY_DEFAULT = Object.freeze({ http: false, https: false });

/** The maps of `$escaped_request_uri` without Lua: the same for every build. */
const URI_ESCAPE = uriEscape();

function hstsHeader(config: GlobalConfig): string | null {
  if (!config.hsts) return null;
  return [
    `max-age=${config.hstsMaxAge}`,
    ...(config.hstsIncludeSubdomains ? ['includeSubDomains'] : []),
    ...(config.hstsPreload ? ['preload'] : []),
  ].join('; ');
}

/**
 * buildModel turns a Snapshot into the nginx model and the problems found on the way. It is
 * pure: the same snapshot and options always give the same model, in the same order. Every
 * string that reaches the model has passed a validator for its field; what fails is left out
 * (the rule, the path, the TLS entry, or the Ingress whose annotations are invalid) and
 * reported, and the rest is still served. With a `memo` from the previous build, only what
 * changed is worked out again: the plans of changed Ingresses and the hosts they touch.
 */
export function buildModel(
  snapshot: Snapshot,
  options: BuildOptions = defaultBuildOptions,
  memo: BuildMemo = new BuildMemo(),
): BuildResult {
  const problems: Problem[] = [];
  memo.built.keepEmpty = options.dynamic !== undefined;
  const settings = settingsOf(snapshot, options, memo, problems);
  const ours = oursInAgeOrder(snapshot, options, memo);
  const plans = plansOf(ours, settings, memo, problems);
  const hosts = hostsOf(plans, settings, memo, problems);
  const http = hosts.extras.model();
  const upstreams = upstreamsOf(memo, settings.config, settings.changes.lookups, problems);
  const files = filesOf(memo, settings.certificates, http.files);
  const extras = globalExtras(settings.config, snapshot.configMaps, options.configMap, options.modules ?? {}, problems);
  const model = modelOf(options, settings, memo, { hosts, http, upstreams, files, extras });
  const streamed = withStream(model, snapshot, options, settings, memo.passthroughPlans.of(plans), problems);
  return { ...withGateway(streamed, snapshot, options, settings, memo, problems), problems };
}

/**
 * withGateway runs the Gateway API core once per build (it is small, and made afresh) and, with the Lua balancer,
 * adds its servers, backends and routes table to the model. Without Lua nothing is served, and each GatewayClass of
 * ours says why.
 */
function withGateway(
  model: NginxModel,
  snapshot: Snapshot,
  options: BuildOptions,
  settings: Settings,
  memo: BuildMemo,
  problems: Problem[],
): { model: NginxModel; gateway: GatewayRoutes | null } {
  memo.gatewaySecrets = options.gateway ? gatewaySecretKeys(snapshot.gateways ?? []) : [];
  if (!options.gateway) return { model, gateway: null };
  const routes = buildGatewayRoutes({
    ...gatewayInputOf(snapshot, options),
    ports: {
      http: options.httpPort,
      https: options.httpsPort,
      sharedHttps: model.httpsSocket !== null,
      ownAddressFree: model.listen !== null,
    },
    streamPorts: streamPortsOf(model),
    // the same verdict the Ingress TLS path gives each Secret, checked once per Secret object
    certificateError: (namespace, name) => {
      const found = settings.certificates.anyHost(namespace, name);
      return 'error' in found ? found.error : null;
    },
  });
  problems.push(...routes.problems);
  if (!options.dynamic) return { model, gateway: withoutLua(routes) };
  const tls = backendTls({
    policies: snapshot.backendTLSPolicies ?? [],
    configMaps: snapshot.configMaps,
    services: snapshot.services,
    routes,
  });
  problems.push(...tls.problems);
  const withPolicies: GatewayRoutes =
    tls.status.length === 0 ? routes : { ...routes, status: { ...routes.status, backendTLSPolicies: tls.status } };
  const done = gatewayModel(
    {
      model,
      routes: withPolicies,
      lookups: settings.changes.lookups,
      certificates: settings.certificates,
      backendTls: tls.byUpstream,
    },
    problems,
  );
  // TLS Terminate listeners' certificates are files the stream block names, written with the http servers'
  const terminate = terminateCertificates(routes.streams ?? [], settings.certificates, problems);
  const reused = reuseGateway(memo.gateway, withCertificates(done.model, terminate.values()));
  memo.gateway = { gateway: reused.gateway, certificates: reused.certificates };
  const stream = gatewayStream(
    {
      streams: routes.streams ?? [],
      lookups: settings.changes.lookups,
      httpPort: options.httpPort,
      httpsPort: options.httpsPort,
      listenHost: listenHostOf(model),
      stream: model.stream,
      modules: (options.stream ?? DEFAULT_STREAM_SETTINGS).modules,
      servers: model.servers,
      socketDir: (options.stream ?? DEFAULT_STREAM_SETTINGS).socketDir,
      terminateCertificates: terminate,
    },
    problems,
  );
  return { model: stream === model.stream ? reused : { ...reused, stream }, gateway: done.routes };
}

/** withCertificates adds certificate files the model does not name yet (one file per Secret). */
function withCertificates(model: NginxModel, more: Iterable<Certificate>): NginxModel {
  const files = new Set(model.certificates.map((c) => c.file));
  const extra = [...more].filter((c) => !files.has(c.file) && files.add(c.file));
  return extra.length === 0 ? model : { ...model, certificates: [...model.certificates, ...extra] };
}

/** streamPortsOf are the ports the TCP and UDP services ConfigMaps' entries take: no Gateway listener gets them. */
function streamPortsOf(model: NginxModel): { tcp: number[]; udp: number[] } {
  const services = model.stream?.services ?? [];
  const port = (listen: string) => Number(listen.slice(listen.lastIndexOf(':') + 1));
  return {
    tcp: services.filter((s) => !s.udp).map((s) => port(s.listen)),
    udp: services.filter((s) => s.udp).map((s) => port(s.listen)),
  };
}

/** listenHostOf is the `host:` part of the listen directives (BuildOptions.listenAddress), or '' for all addresses. */
const listenHostOf = (model: NginxModel) =>
  model.listen ? model.listen.https.slice(0, model.listen.https.lastIndexOf(':') + 1) : '';

const NO_LUA =
  'the Gateway API needs the Lua balancer (--dynamic-backends; Debian: libnginx-mod-http-lua lua-cjson), which this ' +
  'nginx does not have: no Gateway is served';

/**
 * withoutLua: the Gateway API needs the Lua balancer. Every class of ours is Accepted=False, and its Gateways and
 * listeners Programmed=False, saying so.
 */
function withoutLua(routes: GatewayRoutes): GatewayRoutes {
  const notProgrammed = (c: Condition): Condition =>
    c.type === 'Programmed' ? { ...c, status: 'False', reason: 'Invalid', message: NO_LUA } : c;
  const gatewayClasses = routes.status.gatewayClasses.map((c) => ({
    ...c,
    conditions: c.conditions.map((k) =>
      k.type === 'Accepted' ? { ...k, status: 'False' as const, reason: 'UnsupportedNginx', message: NO_LUA } : k,
    ),
  }));
  const gateways = routes.status.gateways.map((g) => ({
    ...g,
    // nothing is served, so no Gateway holds a pool address (--gateway-addresses)
    ...(g.addresses === undefined ? {} : { addresses: [] }),
    conditions: g.conditions.map(notProgrammed),
    listeners: g.listeners.map((l) => ({ ...l, conditions: l.conditions.map(notProgrammed) })),
  }));
  return { listeners: [], status: { ...routes.status, gatewayClasses, gateways }, problems: routes.problems };
}

/**
 * withStream adds the stream block (TCP and UDP services, ssl-passthrough), made afresh each build from the finished
 * http model: it is small, and its upstreams list endpoints, so any change may touch it.
 */
function withStream(
  model: NginxModel,
  snapshot: Snapshot,
  options: BuildOptions,
  settings: Settings,
  passthroughPlans: readonly IngressPlan[],
  problems: Problem[],
): NginxModel {
  const listenHost = listenHostOf(model);
  const stream = buildStream(
    options,
    {
      snapshot,
      lookups: settings.changes.lookups,
      config: model.config,
      passthroughPlans,
      servers: model.servers,
      upstreams: model.upstreams,
      listenHost,
    },
    problems,
  );
  if (stream === null) return model;
  return { ...model, stream, httpsSocket: stream.passthrough?.httpsSocket ?? null };
}

/** Settings are what every plan and host of a build is made under. */
interface Settings {
  readonly config: GlobalConfig;
  readonly changes: Changes;
  readonly certificates: CertificateTable;
  readonly defaultBackend: DefaultTarget;
  readonly defaultTable: UpstreamTable | null;
  /** the `/` of hosts no rule gives one */
  readonly fallback: Route;
  readonly hsts: string | null;
  /** `--default-ssl-certificate`: any TLS host may fall back to it */
  readonly defaultSslCertificate: string | undefined;
  readonly modules: NginxModules;
}

/**
 * settingsOf is the first step: the ConfigMap's globals, the default certificate and the
 * default backend, and what changed since the last build. When the globals or the default
 * backend changed, the memo forgets every plan and host: they were made under other settings.
 */
function settingsOf(snapshot: Snapshot, options: BuildOptions, memo: BuildMemo, problems: Problem[]): Settings {
  const lookups = new Lookups(snapshot, memo.lookups);
  const changes = changesSince(lookups, memo.lookups);
  memo.lookups = lookups;
  const configMap = options.configMap
    ? snapshot.configMaps.find((c) => `${c.metadata?.namespace}/${c.metadata?.name}` === options.configMap)
    : undefined;
  const globals = globalsFor(memo, options, configMap);
  problems.push(...globals.configProblems);
  const certificates = new CertificateTable(
    lookups,
    options.defaultSslCertificate,
    problems,
    memo.verdicts,
    options.dynamic !== undefined,
  );
  const { resolved: defaultBackend, table: defaultTable } = resolveDefaultBackend(
    options.defaultBackendService,
    lookups,
    memo.built,
    problems,
  );
  const fallback = forgetAllUnlessSameSettings(memo, globals, defaultBackend);
  return {
    config: globals.config,
    changes,
    certificates,
    defaultBackend,
    defaultTable,
    fallback,
    hsts: hstsHeader(globals.config),
    defaultSslCertificate: options.defaultSslCertificate,
    modules: options.modules ?? {},
  };
}

/** plansOf gives each Ingress of ours its plan (the memo's while it holds) and reports the Ingresses left out whole. */
function plansOf(
  ours: readonly Ingress[],
  settings: Settings,
  memo: BuildMemo,
  problems: Problem[],
): readonly IngressPlan[] {
  const context = {
    config: settings.config,
    modules: settings.modules,
    lookups: settings.changes.lookups,
    built: memo.built,
    defaultBackendUpstream: settings.defaultBackend.upstream,
  };
  const last = memo.planList;
  const plans = reusedOrNewPlans(ours, memo, settings.changes, context);
  memo.planList = plans;
  memo.planFrom = ours;
  // The Ingresses left out whole are few: their problems are listed again only when such a plan came or went.
  const { gone, came } = listChange(last, plans);
  const leftOut = (plan: IngressPlan) => plan.identifyProblems.length > 0;
  if (memo.identifyProblems === null || gone.some(leftOut) || came.some(leftOut))
    memo.identifyProblems = plans.filter(leftOut).flatMap((plan) => plan.identifyProblems);
  problems.push(...memo.identifyProblems);
  return plans;
}

/**
 * hostsOf settles the hosts the plans touch (only the dirty ones with a memo) and reports what the hosts made of the
 * plans.
 */
function hostsOf(plans: readonly IngressPlan[], settings: Settings, memo: BuildMemo, problems: Problem[]): HostTable {
  const { hosts } = memo;
  const age = (i: Ingress) => memo.age(i);
  const context: HostContext = {
    certificates: settings.certificates,
    fallback: settings.fallback,
    config: settings.config,
    hsts: settings.hsts !== null,
    order: (a, b) => byAge(a.identified!.ingress, b.identified!.ingress, age),
  };
  hosts.update(plans, context, secretsToResettle(settings.changes, settings.defaultSslCertificate));
  hosts.countDefaultBackend(settings.defaultTable);
  hosts.problemsInto(problems);
  problems.push(...[...hosts.sliceProblems.keys()].sort().map((key) => hosts.sliceProblems.get(key)!));
  return hosts;
}

/** What the steps after the plans made: the hosts and their http-level extras, the upstreams, the files. */
interface Built {
  readonly hosts: HostTable;
  readonly http: ReturnType<HostTable['extras']['model']>;
  readonly upstreams: readonly BalancedUpstream[];
  readonly files: { readonly list: readonly Certificate[]; readonly digest: string };
  readonly extras: ReturnType<typeof globalExtras>;
}

/** modelOf assembles the model from the steps' results. */
function modelOf(
  options: BuildOptions,
  settings: Settings,
  memo: BuildMemo,
  { hosts, http, upstreams, files, extras }: Built,
): NginxModel {
  const { defaultServer, named, config: fitted } = serversView(memo, hosts.servers(), settings.config);
  const config = fitted.enableBrotli === extras.config.enableBrotli ? fitted : { ...fitted, enableBrotli: false };
  const features = memo.locationFeatures.of(named, defaultServer);
  const waf = httpWaf(config, features, options.modules ?? {}, options.wafAuditLog);
  return {
    gateway: null,
    gatewayDefault: NO_GATEWAY_DEFAULT,
    httpPort: options.httpPort,
    httpsPort: options.httpsPort,
    httpsRedirect: `https://$ia_redirect_host${options.httpsPort === 443 ? '' : `:${options.httpsPort}`}$ia_redirect_uri`,
    httpsRedirectPreserved: `https://$ia_redirect_host${options.httpsPort === 443 ? '' : `:${options.httpsPort}`}$request_uri`,
    originalForwardedFor: `$http_${config.forwardedForHeader.toLowerCase().replaceAll('-', '_')}`,
    listen: listenOf(options),
    lua: options.dynamic ?? null,
    tracing: options.dynamic && features.traced ? tracingOf(config) : null,
    routeLabels: options.dynamic ? options.dynamic.requestMetrics || features.traced : false,
    modules: [...extras.modules, ...waf.load],
    waf: waf.waf,
    addHeaders: extras.addHeaders,
    proxySetHeaders: extras.proxySetHeaders,
    clearServerHeader: extras.clearServerHeader,
    stream: null,
    httpsSocket: null,
    statusSocket: options.statusSocket ?? null,
    config,
    hstsHeader: settings.hsts,
    // Only auth-url needs these: without it the file does not depend on the machine's nameservers.
    externalAuth:
      hosts.externalAuthHosts.size > 0
        ? { resolvers: options.resolvers ?? [], escape: options.dynamic ? null : URI_ESCAPE }
        : null,
    proxyHeaders: { host: DEFAULT_PROXY_HOST },
    requestZones: http.requestZones,
    connectionZones: http.connectionZones,
    maps: http.maps,
    canaries: http.canaries,
    defaultServer,
    servers: named,
    defaultCertificateFile: settings.certificates.defaultCertificate.file,
    // Only what a location proxies to (with its canary) or renders errors with: a defaultBackend that lost to a rule
    // writes no upstream.
    upstreams,
    certificates: files.list,
    filesDigest: files.digest,
  };
}

/** tracingOf is the sampler nginx's Lua applies to new traces, as the share of them it samples. */
function tracingOf(config: GlobalConfig): Tracing {
  const ratio =
    config.otelSampler === 'AlwaysOn' ? 1 : config.otelSampler === 'AlwaysOff' ? 0 : config.otelSamplerRatio;
  return { ratio, parentBased: config.otelSamplerParentBased };
}

/** listenOf spells the listen addresses of `listenAddress` (IPv6 in brackets), or null for all addresses. */
function listenOf(options: BuildOptions): NginxModel['listen'] {
  if (options.listenAddress === undefined) return null;
  const ip = checkIp(options.listenAddress);
  // A build option, not a Kubernetes value: a wrong one is the caller's bug, and nginx must not listen wider than
  // asked.
  if (!ip.ok) throw new RangeError(`listenAddress: ${ip.message}`);
  const host = ip.value.family === 6 ? `[${ip.value.address}]` : ip.value.address;
  return { http: `${host}:${options.httpPort}`, https: `${host}:${options.httpsPort}` };
}

/**
 * oursInAgeOrder gives the Ingresses this controller serves, oldest first (then namespace/name),
 * as ingress-nginx settles conflicts. When a few Ingresses came, went or were replaced since the
 * last build (same classes and options), the last order is patched: they are taken out and put in
 * by binary search, not the whole list filtered and sorted again.
 */
function oursInAgeOrder(snapshot: Snapshot, options: BuildOptions, memo: BuildMemo): readonly Ingress[] {
  const age = (i: Ingress) => memo.age(i);
  const from = snapshot.ingresses;
  const classes = snapshot.ingressClasses;
  const known = memo.ours;
  if (known && known.from === from && known.classes === classes && known.options === options) return known.list;
  const byName = new Map<string, IngressClass>();
  for (const c of classes) if (c.metadata?.name) byName.set(c.metadata.name, c);
  const ours = (i: Ingress) => isOurs(i, byName, options);
  const order = (a: Ingress, b: Ingress) => byAge(a, b, age);
  let list =
    known && known.classes === classes && known.options === options
      ? patched(known.list, listChange(known.from, from), ours, order)
      : null;
  list ??= from.filter(ours).sort(order);
  memo.ours = { from, classes, options, list };
  return list;
}

/** a change of more items than this sorts the whole list again */
const FEW = 32;

/**
 * patched is `list` (ours, in `order`) with the Ingresses of a list change taken out and put in, or null when more than
 * a few changed or `list` is not what the change says. The same list when none of them is ours.
 */
function patched(
  list: readonly Ingress[],
  { gone, came }: { readonly gone: readonly Ingress[]; readonly came: readonly Ingress[] },
  ours: (i: Ingress) => boolean,
  order: (a: Ingress, b: Ingress) => number,
): readonly Ingress[] | null {
  if (gone.length + came.length > FEW) return null;
  const out = gone.filter(ours);
  const added = came.filter(ours);
  if (out.length === 0 && added.length === 0) return list;
  const next = [...list];
  // the items before `start` and the last `end` are untouched by every step (for listChange's callers)
  let start = next.length;
  let end = next.length;
  for (const ingress of out) {
    const at = lowerBound(next, (i) => order(i, ingress) < 0);
    if (next[at] !== ingress) return null;
    start = Math.min(start, at);
    end = Math.min(end, next.length - at - 1);
    next.splice(at, 1);
  }
  for (const ingress of added) {
    const at = lowerBound(next, (i) => order(i, ingress) < 0);
    start = Math.min(start, at);
    end = Math.min(end, next.length - at);
    next.splice(at, 0, ingress);
  }
  tellChange(list, next, start, end);
  return next;
}

/**
 * serversView splits the servers into the catch-all and the named ones, and fits the server_names hash to the names.
 */
function serversView(
  memo: BuildMemo,
  servers: readonly Server[],
  baseConfig: GlobalConfig,
): NonNullable<BuildMemo['view']> {
  const view = memo.view;
  if (view && view.servers === servers && view.baseConfig === baseConfig) return view;
  // Regex names (the wildcards) are not in nginx's server_names hash; only exact names count. Counted as servers come
  // and go (the list keeps its order: src/model/incremental/list-diff.ts).
  const hashed = (s: Server) => !s.isDefault && !s.host.startsWith('*.');
  const { start, end, gone, came } = listChange(view?.servers ?? [], servers);
  for (const s of came) if (hashed(s)) memo.serverNames.add(s.serverName);
  for (const s of gone) if (hashed(s)) memo.serverNames.remove(s.serverName);
  // The catch-all `_` is one server among them (they are sorted by host): where it was while the change is after it.
  const kept = view !== null && view.at >= 0 && view.at < start;
  const at = kept ? view.at : servers.findIndex((s) => s.isDefault);
  const named = at < 0 ? servers : at === 0 ? servers.slice(1) : [...servers.slice(0, at), ...servers.slice(at + 1)];
  if (kept && at >= 0) tellChange(view.named, named, start - 1, end);
  const config = memo.serverNames.fit(baseConfig);
  memo.view = { servers, baseConfig, defaultServer: servers[at]!, at, named, config };
  return memo.view;
}

/**
 * upstreamsOf gives the upstreams the servers proxy to, the last build's list while nothing they are made from changed.
 */
function upstreamsOf(
  memo: BuildMemo,
  config: GlobalConfig,
  lookups: Lookups,
  problems: Problem[],
): readonly BalancedUpstream[] {
  const balanced = balancedOf(memo, config, lookups);
  problems.push(...balanced.problems);
  return balanced.upstreams;
}

function balancedOf(memo: BuildMemo, config: GlobalConfig, lookups: Lookups): Balanced {
  const { hosts } = memo;
  // Services matter too, for service-upstream (ClusterIP) variants; a new config resets the whole memo.
  const balanced = memo.balanced.of(hosts, config, lookups.services);
  // What the plans built for upstreams no longer used is forgotten now and then, not looked for on every build.
  if (memo.built.size > 2 * hosts.used.size + 64) memo.built.retain((name) => hosts.used.has(name));
  return balanced;
}

/**
 * filesOf lists the files nginx.conf names (certificates, then htpasswd files) with their digest, kept while they are
 * the same.
 */
function filesOf(
  memo: BuildMemo,
  certificates: CertificateTable,
  httpFiles: readonly Certificate[],
): { list: readonly Certificate[]; digest: string } {
  const tally = memo.hosts.certificates;
  // every build takes the tally's changes, so they are those since the last build's
  const changed = tally.takeChanges();
  const key = tally.version;
  const { defaultCertificate } = certificates;
  const known = memo.files;
  // The default certificate is made anew by every build: the same one has the same id and content.
  const sameDefault =
    known !== null &&
    known.defaultCertificate.id === defaultCertificate.id &&
    known.defaultCertificate.pem === defaultCertificate.pem;
  const certs =
    known && known.key === key && sameDefault
      ? known.certs
      : known && sameDefault && changed !== null && changed.size <= FEW
        ? withCertificatesChanged(known.certs, changed, tally, defaultCertificate.file)
        : certificates.certificates(tally.values());
  const list = httpFiles.length === 0 ? certs : [...certs, ...httpFiles];
  const digest = known && sameItems(known.list, list) ? known.digest : filesDigest(list);
  memo.files = { key, defaultCertificate, certs, list, digest };
  return memo.files;
}

/**
 * withCertificatesChanged is `list` (CertificateTable.certificates: the default first, then by id) with the
 * certificates of the `changed` ids taken out and the tally's put in their place: a TLS host among 10,000 does not
 * sort 1,000 certificates again.
 */
function withCertificatesChanged(
  list: readonly Certificate[],
  changed: ReadonlySet<string>,
  tally: { get(id: string): Certificate | undefined },
  defaultFile: string,
): Certificate[] {
  const out = [...list];
  // the named ones, after the default certificate
  const at = (id: string) => lowerBound(out, (c) => compare(c.id, id) < 0, 1);
  for (const id of changed) {
    const i = at(id);
    if (out[i]?.id === id) out.splice(i, 1);
    const now = tally.get(id);
    if (now !== undefined && now.file !== defaultFile) out.splice(at(id), 0, now);
  }
  return out;
}

/** resolveDefaultBackend resolves --default-backend-service; its table holds the upstream for the model. */
function resolveDefaultBackend(
  flag: string | undefined,
  lookups: Lookups,
  built: BuiltUpstreams,
  problems: Problem[],
): { resolved: DefaultTarget; table: UpstreamTable | null } {
  if (!flag) return { resolved: { upstream: null, status: 404 }, table: null };
  const [namespace = '', name = ''] = flag.split('/');
  const report: Report = (field, message) =>
    problems.push({ kind: 'Service', namespace, name, field: `--default-backend-service (${field})`, message });
  const reads = new TrackedReads(lookups);
  const backend = checkDnsLabel(namespace).ok && checkDnsLabel(name).ok ? firstPort(reads, namespace, name) : null;
  if (!backend) {
    report('service', `Service ${show(flag)} not found or without ports; unknown hosts get 404`);
    return { resolved: { upstream: null, status: 404 }, table: null };
  }
  const table = new UpstreamTable(reads, built);
  return { resolved: table.resolve(namespace, backend, 'service', report), table };
}
