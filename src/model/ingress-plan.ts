/**
 * An Ingress's plan: everything buildModel learns from one Ingress on its own (validation,
 * annotations, backends resolved through the Services it names), as steps for the build to
 * apply in age order. Conflicts between Ingresses (a path two of them claim, a host's TLS) are
 * decided when the steps are applied, so a plan depends only on its Ingress and on the objects
 * it read: the build reuses it as long as those are the same objects.
 */
import { IngressFeatures, UpstreamVariants } from './annotations/apply.js';
import { checkAuthUrlHost } from './annotations/external-auth.js';
import { HttpExtras } from './annotations/http-extras.js';
import { NO_ANNOTATIONS, parseAnnotations } from './annotations/registry.js';
import type { IngressAnnotations } from './annotations/types.js';
import { UpstreamTable, compare, type BuiltUpstreams, type Report, type Resolved } from './backends.js';
import { normalisePath, type Route } from './locations.js';
import { TrackedReads, type Lookups } from './lookups.js';
import type { ClientAuth, GlobalConfig, LocationInfo, PathType, Problem, SnippetDirective } from './nginx-model.js';
import type { NginxModules } from './machine-settings.js';
import type { Ingress, IngressBackend } from './snapshot.js';
import { checkRegexPath } from './regex-path.js';
import {
  checkDnsLabel,
  checkHost,
  checkObjectName,
  checkPath,
  checkPathType,
  checkPortName,
  checkPortNumber,
} from './validate.js';

// Bounded by checkPath's 2048 characters; no nested quantifier, so linear.
const REGEX_LIKE = /\.[*+]|[[\]\\|?^]|\$$/;

/** regexPathHint tells the author of a refused path that looks like a regex how to make it one. */
function regexPathHint(path: unknown, useRegex: boolean): string {
  if (typeof path !== 'string' || path.length > 2048 || !REGEX_LIKE.test(path)) return '';
  return useRegex
    ? ' (a regex path needs pathType: ImplementationSpecific, as use-regex or rewrite-target is set)'
    : ' (for a regex path, set nginx.ingress.kubernetes.io/use-regex: "true" and pathType: ImplementationSpecific)';
}

/** The catch-all server's name, as ingress-nginx calls it. */
export const CATCH_ALL = '_';

const AUTH_URL_FIELD = 'metadata.annotations.nginx.ingress.kubernetes.io/auth-url';

/** OwnedRoute is a route with the Ingress that claimed it. */
export type OwnedRoute = Route & { readonly owner: string };

/** Step is one thing a plan asks of the build, in the order the Ingress says it. */
export type Step =
  | { readonly kind: 'problem'; readonly problem: Problem }
  /** the host exists (a rule names it), even with no path */
  | { readonly kind: 'host'; readonly host: string }
  | {
      readonly kind: 'route';
      readonly host: string;
      readonly key: string;
      readonly route: OwnedRoute;
      readonly field: string;
    }
  | {
      readonly kind: 'canary';
      readonly host: string;
      readonly key: string;
      readonly upstream: string;
      readonly field: string;
      readonly rules: NonNullable<IngressAnnotations['canary']>;
    }
  /** spec.defaultBackend: the `/` of these hosts when no rule claims it */
  | { readonly kind: 'fallback'; readonly hosts: readonly string[]; readonly route: Route }
  | { readonly kind: 'snippet'; readonly hosts: readonly string[]; readonly directives: readonly SnippetDirective[] }
  /** auth-tls: the client certificate check of these hosts' servers */
  | {
      readonly kind: 'clientAuth';
      readonly hosts: readonly string[];
      readonly secretId: string;
      readonly clientAuth: ClientAuth;
    };

/** TlsStep is one host of a `spec.tls` entry: a claim on the host's certificate, or why the host was left out. */
export type TlsStep =
  | { readonly kind: 'problem'; readonly problem: Problem }
  | { readonly kind: 'claim'; readonly host: string; readonly field: string; readonly secretName: string | undefined };

/** Identified is an Ingress whose namespace and name are valid, with its annotations as parsed (maybe denied). */
export interface Identified {
  readonly ingress: Ingress;
  readonly namespace: string;
  readonly name: string;
  readonly owner: string;
  readonly annotations: IngressAnnotations;
}

/** IngressPlan is one Ingress's share of a build. */
export interface IngressPlan {
  /** null: the Ingress is left out (an invalid name, or a canary with an invalid annotation) */
  readonly identified: Identified | null;
  /** problems of the Ingress's name and annotations, reported before any rule's */
  readonly identifyProblems: readonly Problem[];
  readonly steps: readonly Step[];
  /** the steps by the host they touch, in order (a fallback or snippet step under each of its hosts) */
  readonly stepsByHost: ReadonlyMap<string, readonly Step[]>;
  /** its `spec.tls` hosts in order; none for a canary, whose TLS is its main Ingress's */
  readonly tls: readonly TlsStep[];
  /** the hosts its TLS claims name */
  readonly tlsHosts: ReadonlySet<string>;
  /** http-level zones, maps and files its annotations need */
  readonly extras: HttpExtras;
  readonly variants: UpstreamVariants;
  readonly upstreams: UpstreamTable;
  /** what it read, to tell whether the plan still holds */
  readonly reads: TrackedReads;
}

/** PlanContext is what a plan may use besides its Ingress: the global settings and the snapshot's objects. */
export interface PlanContext {
  readonly config: GlobalConfig;
  /** the optional modules this nginx has: snippets may use their directives */
  readonly modules: NginxModules;
  readonly lookups: Lookups;
  readonly built: BuiltUpstreams;
  /** the --default-backend-service upstream, which renders custom-http-errors when no annotation names one */
  readonly defaultBackendUpstream: string | null;
}

/** firstPort is a Service's first port as a backend, as ingress-nginx uses for default backends. */
export function firstPort(reads: TrackedReads, namespace: string, name: string): IngressBackend | null {
  const port = reads.service(`${namespace}/${name}`)?.spec?.ports?.[0]?.port;
  return port === undefined ? null : { service: { name, port: { number: port } } };
}

/** planIngress reads one Ingress into its plan. */
export function planIngress(ingress: Ingress, ctx: PlanContext): IngressPlan {
  const reads = new TrackedReads(ctx.lookups);
  const identifyProblems: Problem[] = [];
  const steps: Step[] = [];
  const extras = new HttpExtras();
  const variants = new UpstreamVariants(ctx.config);
  const upstreams = new UpstreamTable(reads, ctx.built);
  const plan = { identifyProblems, steps, extras, variants, upstreams, reads };
  const identified = identify(ingress, identifyProblems, reads, ctx);
  if (identified) planRules(identified, { ...ctx, reads, steps, extras, variants, upstreams });
  const tls = identified && !identified.annotations.canary ? planTls(identified) : [];
  const tlsHosts = new Set(tls.flatMap((t) => (t.kind === 'claim' ? [t.host] : [])));
  return { identified, ...plan, stepsByHost: byHost(steps), tls, tlsHosts };
}

function byHost(steps: readonly Step[]): Map<string, Step[]> {
  const map = new Map<string, Step[]>();
  const add = (host: string, step: Step) => {
    const list = map.get(host);
    if (list) list.push(step);
    else map.set(host, [step]);
  };
  for (const step of steps) {
    if (step.kind === 'problem') continue;
    if (step.kind === 'fallback' || step.kind === 'snippet' || step.kind === 'clientAuth')
      for (const host of step.hosts) add(host, step);
    else add(step.host, step);
  }
  return map;
}

function planTls({ ingress, namespace, name }: Identified): TlsStep[] {
  const steps: TlsStep[] = [];
  for (const [i, tls] of (ingress.spec?.tls ?? []).entries()) {
    for (const [j, rawHost] of (tls.hosts ?? []).entries()) {
      const field = `spec.tls[${i}]`;
      const host = checkHost(rawHost);
      if (host.ok) steps.push({ kind: 'claim', host: host.value, field, secretName: tls.secretName });
      else
        steps.push({
          kind: 'problem',
          problem: {
            kind: 'Ingress',
            namespace,
            name,
            field: `${field}.hosts[${j}]`,
            message: `${host.message}; TLS entry left out`,
          },
        });
    }
  }
  return steps;
}

function identify(
  ingress: Ingress,
  problems: Problem[],
  reads: TrackedReads,
  { config, modules }: PlanContext,
): Identified | null {
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
  const annotations = meta.annotations
    ? parseAnnotations(ingress, namespace.value, name.value, {
        config,
        modules,
        problems,
        secret: (ns, n) => reads.secret(`${ns}/${n}`),
      })
    : NO_ANNOTATIONS;
  if (!annotations) return null;
  return {
    ingress,
    namespace: namespace.value,
    name: name.value,
    owner: `${namespace.value}/${name.value}`,
    annotations,
  };
}

interface RulesContext extends PlanContext {
  readonly reads: TrackedReads;
  readonly steps: Step[];
  readonly extras: HttpExtras;
  readonly variants: UpstreamVariants;
  readonly upstreams: UpstreamTable;
}

function planRules({ ingress, namespace: ns, name, owner, annotations }: Identified, ctx: RulesContext): void {
  const spec = ingress.spec ?? {};
  const { steps } = ctx;
  const report: Report = (field, message) =>
    steps.push({ kind: 'problem', problem: { kind: 'Ingress', namespace: ns, name, field, message } });
  const ruleHosts = new Set<string>();
  // The default-backend annotation answers for paths whose Service has no endpoints, and renders custom-http-errors.
  const annotated = annotations.denied ? null : defaultBackendAnnotation(ns, annotations.defaultBackend, ctx, report);
  const errorBackend = annotated?.upstream ?? ctx.defaultBackendUpstream;
  const features = new IngressFeatures(annotations, owner, {
    config: ctx.config,
    extras: ctx.extras,
    variants: ctx.variants,
    errorBackend,
    lua: ctx.built.keepEmpty,
    report,
  });
  // A denied Ingress's routes answer 503 and proxy nowhere, so their backends are not even resolved.
  const DENIED: Resolved = { upstream: null, status: 503 };
  const resolveTarget = (
    backend: IngressBackend | undefined,
    field: string,
  ): Resolved & { readonly customDefaultBackend?: boolean } =>
    annotations.denied ? DENIED : target(ctx.upstreams.resolve(ns, backend, field, report));
  const target = (resolved: Resolved) => {
    // No Service, port or endpoint: the annotation's Service answers. With the Lua balancer a Service without
    // endpoints still resolves (the balancer would answer 503), so it is looked at here: such a route's nginx.conf
    // then changes when endpoints come (a reload), as ingress-nginx's does.
    const missing = resolved.upstream === null || ctx.upstreams.endpointCount(resolved.upstream) === 0;
    const custom = missing && annotated?.upstream ? { customDefaultBackend: true } : {};
    const r = custom.customDefaultBackend ? annotated! : resolved;
    return r.upstream === null ? r : { upstream: features.upstream(r.upstream), status: null, ...custom };
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
    // auth-url's `$host` is the client's choice where the server name is not exact: fail closed.
    const authHost =
      annotations.externalAuth && !annotations.canary
        ? checkAuthUrlHost(annotations.externalAuth.host, host, CATCH_ALL)
        : null;
    if (authHost) {
      report(AUTH_URL_FIELD, `${authHost}; rule ${field} left out`);
      continue;
    }
    ruleHosts.add(host);
    steps.push({ kind: 'host', host });
    for (const [j, path] of (rule.http?.paths ?? []).entries()) {
      const pf = `${field}.http.paths[${j}]`;
      const checkedType = checkPathType(path.pathType);
      if (!checkedType.ok) {
        report(`${pf}.pathType`, `${checkedType.message}; path left out`);
        continue;
      }
      // ImplementationSpecific paths of a use-regex / rewrite-target Ingress are regexes, as in ingress-nginx.
      const regex = features.regex && (path.pathType ?? 'ImplementationSpecific') === 'ImplementationSpecific';
      const pathType: PathType = regex ? 'ImplementationSpecific' : checkedType.value;
      const checkedPath = regex ? checkRegexPath(path.path ?? '/') : checkPath(path.path ?? '/');
      if (!checkedPath.ok) {
        report(
          `${pf}.path`,
          `${checkedPath.message}${regex ? '' : regexPathHint(path.path, features.regex)}; path left out`,
        );
        continue;
      }
      const p = normalisePath(checkedPath.value, pathType);
      const key = `${pathType} ${p}`;
      if (path.backend?.resource) {
        report(`${pf}.backend.resource`, RESOURCE_LEFT_OUT);
        continue;
      }
      if (annotations.canary) {
        const resolved = ctx.upstreams.resolve(ns, path.backend, `${pf}.backend`, report);
        if (resolved.upstream !== null)
          steps.push({
            kind: 'canary',
            host,
            key,
            upstream: target(resolved).upstream!,
            field: pf,
            rules: annotations.canary,
          });
        continue;
      }
      const resolved = resolveTarget(path.backend, `${pf}.backend`);
      steps.push({
        kind: 'route',
        host,
        key,
        field: pf,
        route: {
          path: p,
          pathType,
          ...resolved,
          ingress: owner,
          owner,
          features: features.forRoute(p, regex),
          info: infoOf(ns, name, path.backend),
        },
      });
    }
  }

  const fallbackHosts = (spec.rules ?? []).length === 0 ? [CATCH_ALL] : [...ruleHosts];
  const fallbackAuth =
    annotations.externalAuth && fallbackHosts.includes(CATCH_ALL)
      ? checkAuthUrlHost(annotations.externalAuth.host, CATCH_ALL, CATCH_ALL)
      : null;
  if (spec.defaultBackend?.resource) report('spec.defaultBackend.resource', RESOURCE_LEFT_OUT);
  else if (spec.defaultBackend && !annotations.canary && fallbackAuth)
    report(AUTH_URL_FIELD, `${fallbackAuth}; spec.defaultBackend left out`);
  else if (spec.defaultBackend && !annotations.canary) {
    const resolved = resolveTarget(spec.defaultBackend, 'spec.defaultBackend');
    const route: Route = {
      path: '/',
      pathType: 'Prefix',
      ...resolved,
      ingress: owner,
      features: features.forRoute('/', false),
      info: infoOf(ns, name, spec.defaultBackend),
    };
    // As ingress-nginx: the backend is the `/` of this Ingress's hosts, or the catch-all's when it has no rules.
    steps.push({ kind: 'fallback', hosts: fallbackHosts, route });
  }

  const serverSnippet = annotations.snippets.server;
  if (serverSnippet && !annotations.canary)
    steps.push({ kind: 'snippet', hosts: [...ruleHosts].sort(compare), directives: serverSnippet });
  const tls = annotations.authTls;
  if (tls && !annotations.canary) {
    const clientAuth = {
      caFile: ctx.extras.caFile(tls.secretId, tls.caPem),
      verifyClient: tls.verifyClient,
      depth: tls.depth,
      errorPage: tls.errorPage,
    };
    steps.push({ kind: 'clientAuth', hosts: [...ruleHosts].sort(compare), secretId: tls.secretId, clientAuth });
  }
}

/** RESOURCE_LEFT_OUT says what happens to a backend that names a resource instead of a Service. */
const RESOURCE_LEFT_OUT =
  'not a Service: left out, as ingress-nginx does, so its requests reach what else matches (the default backend)';

/** infoOf names what a path serves as ingress-nginx's error backends hear it; what fails its check is empty. */
function infoOf(namespace: string, ingressName: string, backend: IngressBackend | undefined): LocationInfo {
  const service = checkDnsLabel(backend?.service?.name);
  const port = backend?.service?.port;
  const number = port?.number !== undefined ? checkPortNumber(port.number) : null;
  const named = port?.name !== undefined ? checkPortName(port.name) : null;
  return {
    namespace,
    ingressName,
    serviceName: service.ok ? service.value : '',
    servicePort: number?.ok ? String(number.value) : named?.ok ? named.value : '',
  };
}

function defaultBackendAnnotation(
  ns: string,
  service: string | null,
  ctx: RulesContext,
  report: Report,
): Resolved | null {
  if (service === null) return null;
  const field = 'metadata.annotations.nginx.ingress.kubernetes.io/default-backend';
  const backend = firstPort(ctx.reads, ns, service);
  if (!backend) {
    report(field, `Service ${ns}/${service} not found or without ports; ignored`);
    return null;
  }
  return ctx.upstreams.resolve(ns, backend, field, report);
}
