import { UpstreamTable, compare, type Report } from './backends.js';
import { fitServerNameHash, readConfigMap } from './config-map.js';
import { isOurs, type ClassOptions } from './ingress-class.js';
import { normalisePath, toLocations, type Route } from './locations.js';
import type { BuildResult, NginxModel, Problem, Server } from './nginx-model.js';
import type { Ingress, IngressClass, Snapshot } from './snapshot.js';
import { CertificateTable } from './tls.js';
import { checkDnsLabel, checkHost, checkObjectName, checkPath, checkPathType, show } from './validate.js';

/** BuildOptions are the controller flags buildModel depends on. */
export interface BuildOptions extends ClassOptions {
  /** `--configmap ns/name` */
  readonly configMap?: string;
  /** `--default-ssl-certificate ns/name` */
  readonly defaultSslCertificate?: string;
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

/**
 * buildModel turns a Snapshot into the nginx model and the problems found on the way. It is
 * pure: the same snapshot and options always give the same model, in the same order. Every
 * string that reaches the model has passed a validator for its field; what fails is left out
 * (the rule, the path or the TLS entry) and reported, and the rest is still served.
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
  const upstreams = new UpstreamTable(snapshot);
  const certificates = new CertificateTable(snapshot, options.defaultSslCertificate, problems);
  const hosts = new Map<string, HostDraft>();
  const draft = (host: string): HostDraft => {
    let d = hosts.get(host);
    if (!d) hosts.set(host, (d = { routes: new Map(), fallback: null, tls: null }));
    return d;
  };
  draft(CATCH_ALL);

  const ctx: BuildContext = { upstreams, certificates, draft, hosts, problems };
  const ours = snapshot.ingresses.filter((i) => isOurs(i, classes, options)).sort(byAge);
  const valid = ours.map((ingress) => identify(ingress, problems)).filter((i) => i !== null);
  // Rules first, for every Ingress, so TLS can find a host whichever Ingress brought it.
  for (const ingress of valid) addRules(ingress, ctx);
  for (const ingress of valid) addTls(ingress, ctx);

  const defaultFile = certificates.defaultCertificate.file;
  const servers: Server[] = [...hosts.entries()]
    .sort(([a], [b]) => compare(a, b))
    .map(([host, d]) => {
      const routes: Route[] = [...d.routes.values()];
      if (!routes.some((r) => r.pathType === 'Prefix' && r.path === '/')) {
        routes.push(d.fallback ?? { path: '/', pathType: 'Prefix', upstream: null, status: 404, ingress: null });
      }
      return {
        host,
        serverName: serverNameFor(host),
        isDefault: host === CATCH_ALL,
        certificateFile: d.tls?.file ?? defaultFile,
        locations: toLocations(routes, d.tls !== null && baseConfig.sslRedirect),
      };
    });
  problems.push(...upstreams.problems());

  const proxied = new Set(servers.flatMap((s) => s.locations.map((l) => l.upstream)));
  const defaultServer = servers.find((s) => s.isDefault)!;
  const named = servers.filter((s) => !s.isDefault);
  const model: NginxModel = {
    httpPort: options.httpPort,
    httpsPort: options.httpsPort,
    httpsRedirect: `https://$host${options.httpsPort === 443 ? '' : `:${options.httpsPort}`}$request_uri`,
    // Regex names (the wildcards) are not in nginx's server_names hash; only exact names count.
    config: fitServerNameHash(baseConfig, named.filter((s) => !s.host.startsWith('*.')).map((s) => s.serverName)),
    defaultServer,
    servers: named,
    // Only what a location proxies to: a defaultBackend that lost to a rule writes no upstream.
    upstreams: upstreams.used().filter((u) => proxied.has(u.name)),
    certificates: certificates.certificates(),
  };
  return { model, problems };
}

interface BuildContext {
  readonly upstreams: UpstreamTable;
  readonly certificates: CertificateTable;
  readonly draft: (host: string) => HostDraft;
  readonly hosts: ReadonlyMap<string, HostDraft>;
  readonly problems: Problem[];
}

/** Identified is an Ingress whose namespace and name are valid, with a reporter for its fields. */
interface Identified {
  readonly ingress: Ingress;
  readonly namespace: string;
  readonly owner: string;
  readonly report: Report;
}

function identify(ingress: Ingress, problems: Problem[]): Identified | null {
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
  return { ingress, namespace: namespace.value, owner: `${namespace.value}/${name.value}`, report };
}

function addRules({ ingress, namespace: ns, owner, report }: Identified, ctx: BuildContext): void {
  const spec = ingress.spec ?? {};
  const ruleHosts = new Set<string>();

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
      const pathType = checkPathType(path.pathType);
      if (!pathType.ok) {
        report(`${pf}.pathType`, `${pathType.message}; path left out`);
        continue;
      }
      const checkedPath = checkPath(path.path ?? '/');
      if (!checkedPath.ok) {
        report(`${pf}.path`, `${checkedPath.message}; path left out`);
        continue;
      }
      const p = normalisePath(checkedPath.value, pathType.value);
      const routeKey = `${pathType.value} ${p}`;
      const taken = d.routes.get(routeKey);
      if (taken) {
        report(`${pf}.path`, `host ${show(host)} path ${show(p)} (${pathType.value}) is already served by Ingress ${taken.owner}; path left out`);
        continue;
      }
      const target = ctx.upstreams.resolve(ns, path.backend, `${pf}.backend`, report);
      d.routes.set(routeKey, { path: p, pathType: pathType.value, ...target, ingress: owner, owner });
    }
  }

  if (spec.defaultBackend) {
    const target = ctx.upstreams.resolve(ns, spec.defaultBackend, 'spec.defaultBackend', report);
    const fallback: Route = { path: '/', pathType: 'Prefix', ...target, ingress: owner };
    // As ingress-nginx: the backend is the `/` of this Ingress's hosts, or the catch-all's when it has no rules.
    const claimed = (spec.rules ?? []).length === 0 ? [CATCH_ALL] : [...ruleHosts];
    for (const host of claimed) {
      const d = ctx.draft(host);
      if (d.fallback === null) d.fallback = fallback;
      else if (host === CATCH_ALL) report('spec.defaultBackend', `the default backend is already set by Ingress ${d.fallback.ingress}; ignored`);
    }
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
