import { UpstreamTable, compare, type Report, type Resolved } from './backends.js';
import { IngressFeatures, UpstreamVariants } from './annotations/apply.js';
import { HttpExtras } from './annotations/http-extras.js';
import { NO_ANNOTATIONS, parseAnnotations } from './annotations/registry.js';
import type { IngressAnnotations } from './annotations/types.js';
import { filesDigest } from './files-digest.js';
import { fitServerNameHash, readConfigMap } from './config-map.js';
import { isOurs, type ClassOptions } from './ingress-class.js';
import { normalisePath, toLocations, type Route } from './locations.js';
import type { BuildResult, ErrorLocation, GlobalConfig, NginxModel, Problem, Server } from './nginx-model.js';
import type { Ingress, IngressBackend, IngressClass, Service, Snapshot } from './snapshot.js';
import { CertificateTable } from './tls.js';
import { checkDnsLabel, checkHost, checkObjectName, checkPath, checkPathType, checkRegexPath, show } from './validate.js';

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

/** The catch-all server's name, as ingress-nginx calls it. */
export const CATCH_ALL = '_';

interface HostDraft {
  readonly routes: Map<string, Route & { owner: string }>;
  /** the `/` an Ingress's defaultBackend gives its hosts when no rule claims it */
  fallback: Route | null;
  tls: { file: string; owner: string; secretName: string } | null;
  snippet: { lines: readonly string[]; owner: string } | null;
}

function millis(t: string | Date | undefined): number {
  if (t === undefined) return 0;
  const ms = t instanceof Date ? t.getTime() : Date.parse(t);
  return Number.isNaN(ms) ? 0 : ms;
}

/** byAge orders Ingresses as ingress-nginx resolves conflicts: oldest first, then namespace/name. */
function byAge(a: Ingress, b: Ingress): number {
  return (
    millis(a.metadata?.creationTimestamp) - millis(b.metadata?.creationTimestamp) ||
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
 * reported, and the rest is still served.
 */
export function buildModel(snapshot: Snapshot, options: BuildOptions = defaultBuildOptions): BuildResult {
  const problems: Problem[] = [];
  const configMap = options.configMap
    ? snapshot.configMaps.find((c) => `${c.metadata?.namespace}/${c.metadata?.name}` === options.configMap)
    : undefined;
  const { config: baseConfig, problems: configProblems } = readConfigMap(configMap);
  problems.push(...configProblems);

  const classes = new Map<string, IngressClass>();
  for (const c of snapshot.ingressClasses) if (c.metadata?.name) classes.set(c.metadata.name, c);
  const services = new Map<string, Service>();
  for (const s of snapshot.services) services.set(`${s.metadata?.namespace}/${s.metadata?.name}`, s);
  const secrets = new Map(snapshot.secrets.map((s) => [`${s.metadata?.namespace}/${s.metadata?.name}`, s]));
  const upstreams = new UpstreamTable(snapshot);
  const certificates = new CertificateTable(snapshot, options.defaultSslCertificate, problems);
  const hosts = new Map<string, HostDraft>();
  const draft = (host: string): HostDraft => {
    let d = hosts.get(host);
    if (!d) hosts.set(host, (d = { routes: new Map(), fallback: null, tls: null, snippet: null }));
    return d;
  };
  draft(CATCH_ALL);

  const extras = new HttpExtras();
  const variants = new UpstreamVariants(baseConfig, services);
  // The default backends use the Service's first port, as ingress-nginx does.
  const firstPort = (namespace: string, name: string): IngressBackend | null => {
    const port = services.get(`${namespace}/${name}`)?.spec?.ports?.[0]?.port;
    return port === undefined ? null : { service: { name, port: { number: port } } };
  };
  const defaultBackend = resolveDefaultBackend(options.defaultBackendService, upstreams, firstPort, problems);
  const ctx: BuildContext = { config: baseConfig, upstreams, certificates, draft, hosts, problems, extras, variants, firstPort, defaultBackend, canaries: [] };
  const ours = snapshot.ingresses.filter((i) => isOurs(i, classes, options)).sort(byAge);
  const valid = ours
    .map((ingress) => identify(ingress, problems, { config: baseConfig, problems, secret: (ns, name) => secrets.get(`${ns}/${name}`) }))
    .filter((i) => i !== null);
  // Rules first, for every Ingress, so TLS can find a host whichever Ingress brought it.
  for (const ingress of valid) addRules(ingress, ctx);
  attachCanaries(ctx);
  for (const ingress of valid) if (!ingress.annotations.canary) addTls(ingress, ctx);

  const defaultFile = certificates.defaultCertificate.file;
  const hsts = hstsHeader(baseConfig);
  const fallback: Route = { path: '/', pathType: 'Prefix', ...defaultBackend, ingress: null, features: null };
  const servers: Server[] = [...hosts.entries()]
    .sort(([a], [b]) => compare(a, b))
    .map(([host, d]) => {
      const routes: Route[] = [...d.routes.values()];
      if (!routes.some((r) => r.pathType === 'Prefix' && r.path === '/')) routes.push(d.fallback ?? fallback);
      const serverHsts = hsts !== null && d.tls !== null;
      const locations = toLocations(routes, { tls: d.tls !== null, sslRedirect: baseConfig.sslRedirect, forceSslRedirect: baseConfig.forceSslRedirect, hsts: serverHsts });
      const errors = new Map<string, ErrorLocation>();
      for (const page of locations.flatMap((l) => l.errorPages ?? [])) errors.set(page.name, page);
      return {
        host,
        serverName: serverNameFor(host),
        isDefault: host === CATCH_ALL,
        certificateFile: d.tls?.file ?? defaultFile,
        inheritsCertificate: (d.tls?.file ?? defaultFile) === defaultFile,
        ingresses: [...new Set(routes.flatMap((r) => (r.ingress ? [r.ingress] : [])))].sort(compare),
        locations,
        hsts: serverHsts,
        snippet: d.snippet?.lines ?? null,
        errorLocations: [...errors.values()].sort((a, b) => compare(a.name, b.name)),
      };
    });
  problems.push(...upstreams.problems());

  // Only what a location proxies to (with its canary) or renders errors with.
  const proxied = new Set<string | null>(
    servers.flatMap((s) => [...s.locations.flatMap((l) => (l.pass ? [l.upstream, l.pass.canary] : [])), ...s.errorLocations.map((e) => e.upstream)]),
  );
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
    upstreams: variants.build(upstreams.used(), proxied, problems),
    certificates: files,
    filesDigest: filesDigest(files),
  };
  return { model, problems };
}

function resolveDefaultBackend(
  flag: string | undefined,
  upstreams: UpstreamTable,
  firstPort: (namespace: string, name: string) => IngressBackend | null,
  problems: Problem[],
): Resolved | { upstream: null; status: 404 } {
  if (!flag) return { upstream: null, status: 404 };
  const [namespace = '', name = ''] = flag.split('/');
  const report: Report = (field, message) => problems.push({ kind: 'Service', namespace, name, field: `--default-backend-service (${field})`, message });
  const backend = checkDnsLabel(namespace).ok && checkDnsLabel(name).ok ? firstPort(namespace, name) : null;
  if (!backend) {
    report('service', `Service ${show(flag)} not found or without ports; unknown hosts get 404`);
    return { upstream: null, status: 404 };
  }
  return upstreams.resolve(namespace, backend, 'service', report);
}

interface BuildContext {
  readonly config: GlobalConfig;
  readonly upstreams: UpstreamTable;
  readonly certificates: CertificateTable;
  readonly draft: (host: string) => HostDraft;
  readonly hosts: ReadonlyMap<string, HostDraft>;
  readonly problems: Problem[];
  readonly extras: HttpExtras;
  readonly variants: UpstreamVariants;
  readonly firstPort: (namespace: string, name: string) => IngressBackend | null;
  readonly defaultBackend: Resolved | { upstream: null; status: 404 };
  /** routes of canary Ingresses, attached to their main routes once every rule is in */
  readonly canaries: { host: string; key: string; upstream: string; field: string; report: Report; rules: NonNullable<IngressAnnotations['canary']> }[];
}

/** Identified is an Ingress whose namespace, name and annotations are valid, with a reporter for its fields. */
interface Identified {
  readonly ingress: Ingress;
  readonly namespace: string;
  readonly owner: string;
  readonly report: Report;
  readonly annotations: IngressAnnotations;
}

function identify(ingress: Ingress, problems: Problem[], annotationContext: Parameters<typeof parseAnnotations>[3]): Identified | null {
  const meta = ingress.metadata ?? {};
  const report: Report = (field, message) =>
    problems.push({ kind: 'Ingress', namespace: meta.namespace ?? '', name: meta.name ?? '', field, message });
  const namespace = checkDnsLabel(meta.namespace);
  if (!namespace.ok) {
    report('metadata.namespace', `${namespace.message}; Ingress left out`);
    return null;
  }
  const name = checkObjectName(meta.name);
  if (!name.ok) {
    report('metadata.name', `${name.message}; Ingress left out`);
    return null;
  }
  const annotations = meta.annotations ? parseAnnotations(ingress, namespace.value, name.value, annotationContext) : NO_ANNOTATIONS;
  if (!annotations) return null;
  return { ingress, namespace: namespace.value, owner: `${namespace.value}/${name.value}`, report, annotations };
}

function defaultBackendAnnotation(ns: string, service: string | null, ctx: BuildContext, report: Report): Resolved | null {
  if (service === null) return null;
  const field = 'metadata.annotations.nginx.ingress.kubernetes.io/default-backend';
  const backend = ctx.firstPort(ns, service);
  if (!backend) {
    report(field, `Service ${ns}/${service} not found or without ports; ignored`);
    return null;
  }
  return ctx.upstreams.resolve(ns, backend, field, report);
}

function addRules({ ingress, namespace: ns, owner, report, annotations }: Identified, ctx: BuildContext): void {
  const spec = ingress.spec ?? {};
  const ruleHosts = new Set<string>();
  // The default-backend annotation answers for paths whose Service has no endpoints, and renders custom-http-errors.
  const annotated = defaultBackendAnnotation(ns, annotations.defaultBackend, ctx, report);
  const errorBackend = annotated?.upstream ?? ctx.defaultBackend.upstream;
  const features = new IngressFeatures(annotations, owner, { config: ctx.config, extras: ctx.extras, variants: ctx.variants, errorBackend, report });
  const target = (resolved: Resolved) => {
    const r = resolved.upstream === null && annotated?.upstream ? annotated : resolved;
    return r.upstream === null ? r : { upstream: features.upstream(r.upstream), status: null };
  };

  for (const [i, rule] of (spec.rules ?? []).entries()) {
    const field = `spec.rules[${i}]`;
    let host = CATCH_ALL;
    if (rule.host !== undefined && rule.host !== '') {
      const checked = checkHost(rule.host);
      if (!checked.ok) {
        report(`${field}.host`, `${checked.message}; rule left out`);
        continue;
      }
      host = checked.value;
    }
    ruleHosts.add(host);
    const d = ctx.draft(host);
    for (const [j, path] of (rule.http?.paths ?? []).entries()) {
      const pf = `${field}.http.paths[${j}]`;
      const checkedType = checkPathType(path.pathType);
      if (!checkedType.ok) {
        report(`${pf}.pathType`, `${checkedType.message}; path left out`);
        continue;
      }
      // ImplementationSpecific paths of a use-regex / rewrite-target Ingress are regexes, as in ingress-nginx.
      const regex = features.regex && (path.pathType ?? 'ImplementationSpecific') === 'ImplementationSpecific';
      const pathType = regex ? 'ImplementationSpecific' : checkedType.value;
      const checkedPath = regex ? checkRegexPath(path.path ?? '/') : checkPath(path.path ?? '/');
      if (!checkedPath.ok) {
        report(`${pf}.path`, `${checkedPath.message}; path left out`);
        continue;
      }
      const p = normalisePath(checkedPath.value, pathType);
      const routeKey = `${pathType} ${p}`;
      const resolved = ctx.upstreams.resolve(ns, path.backend, `${pf}.backend`, report);
      if (annotations.canary) {
        if (resolved.upstream !== null) ctx.canaries.push({ host, key: routeKey, upstream: target(resolved).upstream!, field: pf, report, rules: annotations.canary });
        continue;
      }
      const taken = d.routes.get(routeKey);
      if (taken) {
        report(`${pf}.path`, `host ${show(host)} path ${show(p)} (${pathType}) is already served by Ingress ${taken.owner}; path left out`);
        continue;
      }
      d.routes.set(routeKey, { path: p, pathType, ...target(resolved), ingress: owner, owner, features: features.forRoute(p, regex) });
    }
  }

  if (spec.defaultBackend && !annotations.canary) {
    const resolved = target(ctx.upstreams.resolve(ns, spec.defaultBackend, 'spec.defaultBackend', report));
    const fallback: Route = { path: '/', pathType: 'Prefix', ...resolved, ingress: owner, features: features.forRoute('/', false) };
    // As ingress-nginx: the backend is the `/` of this Ingress's hosts, or the catch-all's when it has no rules.
    const claimed = (spec.rules ?? []).length === 0 ? [CATCH_ALL] : [...ruleHosts];
    for (const host of claimed) {
      const d = ctx.draft(host);
      if (d.fallback === null) d.fallback = fallback;
      else if (host === CATCH_ALL) report('spec.defaultBackend', `the default backend is already set by Ingress ${d.fallback.ingress}; ignored`);
    }
  }

  const serverSnippet = annotations.snippets.server;
  if (serverSnippet && !annotations.canary) {
    for (const host of [...ruleHosts].sort(compare)) {
      const d = ctx.draft(host);
      if (d.snippet === null) d.snippet = { lines: serverSnippet, owner };
      else report('metadata.annotations.nginx.ingress.kubernetes.io/server-snippet', `host ${show(host)} already has the server-snippet of Ingress ${d.snippet.owner}; ignored there`);
    }
  }
}

/** attachCanaries gives each canary route to the main route of the same host and path, one canary per route. */
function attachCanaries(ctx: BuildContext): void {
  for (const canary of ctx.canaries) {
    const d = ctx.hosts.get(canary.host);
    const main = d?.routes.get(canary.key);
    const rules = canary.rules;
    if (!main || main.upstream === null) {
      canary.report(`${canary.field}.path`, `no Ingress serves host ${show(canary.host)} path ${show(canary.key.split(' ')[1])} with endpoints; canary ignored`);
      continue;
    }
    if (main.canary) {
      canary.report(`${canary.field}.path`, `the route already has a canary; ignored`);
      continue;
    }
    if (!rules.header && !rules.cookie && rules.weight === null) {
      canary.report('metadata.annotations.nginx.ingress.kubernetes.io/canary', 'no canary-by-header, canary-by-cookie or canary-weight: no request would reach it; ignored');
      continue;
    }
    const variable = ctx.extras.canary(`${canary.host} ${canary.key}`, main.upstream, canary.upstream, rules);
    d!.routes.set(canary.key, { ...main, canary: { upstream: canary.upstream, variable } });
  }
}

function addTls({ ingress, namespace: ns, owner, report }: Identified, ctx: BuildContext): void {
  for (const [i, tls] of (ingress.spec?.tls ?? []).entries()) {
    for (const [j, rawHost] of (tls.hosts ?? []).entries()) {
      const field = `spec.tls[${i}]`;
      const host = checkHost(rawHost);
      if (!host.ok) {
        report(`${field}.hosts[${j}]`, `${host.message}; TLS entry left out`);
        continue;
      }
      const d = ctx.hosts.get(host.value);
      if (!d) continue; // TLS for a host no rule serves: nothing to terminate
      const secretName = tls.secretName ?? '';
      if (d.tls) {
        if (d.tls.secretName !== secretName) {
          report(`${field}.secretName`, `host ${show(host.value)} already has TLS from Ingress ${d.tls.owner} (Secret ${show(d.tls.secretName)}); ignored`);
        }
        continue;
      }
      const file = ctx.certificates.forHost(ns, tls.secretName, host.value, field, report);
      d.tls = { file, owner, secretName };
    }
  }
}
