/**
 * convert: Ingresses (with ingress-nginx annotations) → Gateway API objects of the standard channel. Pure: a
 * Snapshot in, objects and the list of what could not be expressed out. One Gateway per IngressClass in use (an HTTP
 * listener on 80, an HTTPS listener on 443 per TLS host), one HTTPRoute per Ingress and host (and one more on the
 * HTTP listener where ingress-nginx redirects to HTTPS), canary Ingresses folded into the routes they shadow. Every
 * string copied has passed the validator the Ingress model uses for its field.
 */
import { createHash } from 'node:crypto';
import { compare } from '../backends.js';
import { defaultBuildOptions } from '../build-types.js';
import { GATEWAY_GROUP } from '../gateway/types.js';
import { normalisePath } from '../locations.js';
import { checkRegexPath } from '../regex-path.js';
import { byAge } from '../ingress-age.js';
import { LEGACY_CLASS_ANNOTATION } from '../ingress-class.js';
import type { ConfigMap, Ingress, IngressBackend, KubeObject, Service, Snapshot } from '../snapshot.js';
import {
  checkDnsLabel,
  checkHost,
  checkObjectName,
  checkPath,
  checkPathType,
  checkPortName,
  checkPortNumber,
  show,
} from '../validate.js';
import { HTTPS_REDIRECT_CODE, TRAILING_SLASH, convertRule } from './annotations.js';
import { isCanaryIngress, readSettings, type Redirect, type Settings } from './read-settings.js';

/** ConvertOptions are convert's flags. */
export interface ConvertOptions {
  /** `--gateway-class-name` */
  readonly gatewayClassName: string;
  /** the GatewayClass's spec.controllerName */
  readonly controllerName: string;
  /** print the GatewayClass (`--no-gateway-class` leaves it out) */
  readonly emitGatewayClass: boolean;
  /** `--gateway-name`: the Gateway's name, or its prefix when several IngressClasses are in use */
  readonly gatewayName: string;
  /** `--gateway-namespace`; absent: the namespace all of its Ingresses share, else `default` */
  readonly gatewayNamespace?: string;
  /**
   * `--controller-class`: an Ingress whose IngressClass (when the manifests hold it) names another controller is
   * left out, as ingress-nginx leaves it
   */
  readonly controllerClass: string;
}

/** defaultConvertOptions are convert's defaults. */
export const defaultConvertOptions: ConvertOptions = {
  gatewayClassName: 'ingress-actors',
  controllerName: 'ingress-actors.io/gateway-controller',
  emitGatewayClass: true,
  gatewayName: 'ingress-actors',
  controllerClass: defaultBuildOptions.controllerClass,
};

/** Unexpressed is one thing convert could not say in Gateway API terms, or said with a difference. */
export interface Unexpressed {
  /** `namespace/name` of the Ingress */
  readonly ingress: string;
  /** the annotation (`metadata.annotations.…`) or Ingress field */
  readonly field: string;
  readonly reason: string;
}

/** ConvertResult is the objects to apply and what they do not express. */
export interface ConvertResult {
  readonly objects: readonly KubeObject[];
  readonly unexpressed: readonly Unexpressed[];
}

/** unexpressedLine is one stderr line: `namespace/name: field: reason`, as render's problems read. */
export function unexpressedLine(u: Unexpressed): string {
  return `${u.ingress}: ${u.field}: ${u.reason}`;
}

/** BACKEND_LEFT_OUT ends the report of a backend that could not be converted. */
const BACKEND_LEFT_OUT = 'backend left out (the rule answers 500, where ingress-nginx answered 503)';
const CATCH_ALL = '';

type Json = Record<string, unknown>;

interface Backend {
  readonly name: string;
  readonly port: number;
  weight?: number;
}

interface Rule {
  /** `Exact /a`, `PathPrefix /a`, `RegularExpression …`: what a canary's path is matched to */
  readonly key: string;
  readonly match: Json;
  readonly filters: readonly Json[];
  readonly backends: Backend[];
  readonly timeout: string | null;
  /** rules a canary header adds before this one */
  readonly extra: Rule[];
}

interface Draft {
  readonly ingress: Ident;
  readonly host: string;
  readonly rules: Rule[];
}

interface Ident {
  readonly ingress: Ingress;
  readonly namespace: string;
  readonly name: string;
  readonly owner: string;
  readonly className: string;
  readonly settings: Settings;
}

interface Tls {
  readonly namespace: string;
  readonly secretName: string;
}

/** classOf is the IngressClass an Ingress names, by field or legacy annotation; '' for none. */
function classOf(ingress: Ingress): string {
  const name = ingress.spec?.ingressClassName ?? ingress.metadata?.annotations?.[LEGACY_CLASS_ANNOTATION] ?? '';
  return checkObjectName(name).ok ? name : '';
}

/** The regex idiom `P(/|$)(.*)` with the target `/$2`: exactly PathPrefix P with ReplacePrefixMatch `/`. */
const PREFIX_IDIOM = /^(\/.*?)\/?\(\/\|\$\)\(\.\*\)$/;

/** regexMatch turns an nginx regex path (anchored at the start only) into an anchored RegularExpression value. */
function regexValue(path: string): string | null {
  if (path.includes('|')) return null;
  // A final `$`, `.*` or `.+` (or `(.*)`, `(.+)`) already reads to the end; another `.*` would make two ways to
  // split the rest, which the router's linear-time subset refuses.
  const value = /(^|[^\\])(\$|\.[*+]|\(\.[*+]\))$/.test(path) ? path : `${path}.*`;
  return checkRegexPath(value, 'both').ok ? value : null;
}

/** converter holds what one run reads and reports. */
class Converter {
  readonly unexpressed: Unexpressed[] = [];
  private readonly services = new Map<string, Service>();
  private readonly configMaps = new Map<string, ConfigMap>();

  constructor(private readonly snapshot: Snapshot) {
    for (const s of snapshot.services) this.services.set(`${s.metadata?.namespace}/${s.metadata?.name}`, s);
    for (const c of snapshot.configMaps) this.configMaps.set(`${c.metadata?.namespace}/${c.metadata?.name}`, c);
  }

  report(owner: string, field: string, reason: string): void {
    this.unexpressed.push({ ingress: owner, field, reason });
  }

  /** identify reads each Ingress (oldest first) that `ours` keeps: its name, class and settings. */
  identify(ours: (className: string, owner: string) => boolean): Ident[] {
    const idents: Ident[] = [];
    // The controller's own order, so that where the oldest Ingress wins (a TLS host's certificate) both agree.
    const sorted = [...this.snapshot.ingresses].sort((a, b) => byAge(a, b));
    for (const ingress of sorted) {
      const namespace = checkDnsLabel(ingress.metadata?.namespace);
      const name = checkObjectName(ingress.metadata?.name);
      // A name that fails its check is quoted, so that it cannot make a line of its own on stderr.
      const owner =
        namespace.ok && name.ok
          ? `${namespace.value}/${name.value}`
          : `${show(ingress.metadata?.namespace ?? '')}/${show(ingress.metadata?.name ?? '')}`;
      if (!namespace.ok || !name.ok) {
        const bad = namespace.ok ? name : namespace;
        this.report(
          owner,
          namespace.ok ? 'metadata.name' : 'metadata.namespace',
          `${(bad as { message: string }).message}; Ingress left out`,
        );
        continue;
      }
      const className = classOf(ingress);
      if (!ours(className, owner)) continue;
      const settings = readSettings(
        ingress,
        namespace.value,
        (ns, n) => this.configMaps.get(`${ns}/${n}`),
        (field, reason) => this.report(owner, field, reason),
      );
      idents.push({
        ingress,
        namespace: namespace.value,
        name: name.value,
        owner,
        className,
        settings,
      });
    }
    return idents;
  }

  /**
   * resource says whether a backend names a resource instead of a Service, reporting it: its caller leaves the rule
   * out, as the model does (src/model/ingress-plan.ts).
   */
  resource(id: Ident, backend: IngressBackend | undefined, field: string): boolean {
    if (!backend?.resource) return false;
    this.report(id.owner, `${field}.resource`, 'not a Service: left out, as ingress-nginx leaves it');
    return true;
  }

  /** backend resolves an Ingress backend to a Service name and port number; null (reported) when it cannot. */
  backend(id: Ident, backend: IngressBackend | undefined, field: string): Backend | null {
    const name = checkDnsLabel(backend?.service?.name);
    if (!name.ok) {
      this.report(id.owner, `${field}.service.name`, `${name.message}; ${BACKEND_LEFT_OUT}`);
      return null;
    }
    const port = backend?.service?.port;
    if (port?.number !== undefined) {
      const number = checkPortNumber(port.number);
      if (number.ok) return { name: name.value, port: number.value };
      this.report(id.owner, `${field}.service.port.number`, `${number.message}; ${BACKEND_LEFT_OUT}`);
      return null;
    }
    const portName = checkPortName(port?.name);
    if (!portName.ok) {
      this.report(id.owner, `${field}.service.port`, `${portName.message}; ${BACKEND_LEFT_OUT}`);
      return null;
    }
    const service = this.services.get(`${id.namespace}/${name.value}`);
    const found = service?.spec?.ports?.find((p) => p.name === portName.value)?.port;
    if (found === undefined || !checkPortNumber(found).ok) {
      this.report(
        id.owner,
        `${field}.service.port.name`,
        `${show(portName.value)}: a backendRef needs a port number, and ${
          service
            ? `Service ${id.namespace}/${name.value} has no such port`
            : `Service ${id.namespace}/${name.value} is not in the manifests`
        }; ${BACKEND_LEFT_OUT}`,
      );
      return null;
    }
    return { name: name.value, port: found };
  }

  /** filters are the filters every rule of the Ingress carries, the rule's own path rewrite included. */
  filters(s: Settings, rewrite: Json | null): Json[] {
    if (s.redirect) return [{ type: 'RequestRedirect', requestRedirect: redirectJson(s.redirect) }];
    const filters: Json[] = [];
    if (s.forwardedPrefix !== null)
      filters.push({
        type: 'RequestHeaderModifier',
        requestHeaderModifier: { set: [{ name: 'X-Forwarded-Prefix', value: s.forwardedPrefix }] },
      });
    if (s.responseHeaders.length > 0)
      filters.push({
        type: 'ResponseHeaderModifier',
        responseHeaderModifier: { set: s.responseHeaders.map((h) => ({ ...h })) },
      });
    if (s.vhost !== null || rewrite !== null)
      filters.push({
        type: 'URLRewrite',
        urlRewrite: {
          ...(s.vhost === null ? {} : { hostname: s.vhost }),
          ...(rewrite === null ? {} : { path: rewrite }),
        },
      });
    return filters;
  }

  /** pathRule reads one path of a main Ingress into a rule; null (reported) when it cannot. */
  pathRule(
    id: Ident,
    rawPath: string | undefined,
    rawType: string | undefined,
    field: string,
  ): Omit<Rule, 'backends'> | null {
    const s = id.settings;
    const type = checkPathType(rawType);
    if (!type.ok) {
      this.report(id.owner, `${field}.pathType`, `${type.message}; path left out`);
      return null;
    }
    const path = rawPath ?? '/';
    const target = s.rewriteTarget;
    const regex =
      (s.useRegex || (target !== null && target !== path)) &&
      (rawType ?? 'ImplementationSpecific') === 'ImplementationSpecific';
    const rewriteField = 'metadata.annotations.nginx.ingress.kubernetes.io/rewrite-target';
    const captures = target !== null && /\$[1-9]/.test(target);
    let match: Json;
    let rewrite: Json | null = null;
    if (regex) {
      const checked = checkRegexPath(path);
      if (!checked.ok) {
        this.report(id.owner, `${field}.path`, `${checked.message}; path left out`);
        return null;
      }
      const idiom = PREFIX_IDIOM.exec(checked.value);
      // Only characters a regex reads literally: `/a.b(/|$)(.*)` is not the prefix `/a.b`.
      const prefix = idiom && /^\/[A-Za-z0-9_~\-/:&=,]*$/.test(idiom[1]!) ? checkPath(idiom[1]) : null;
      if (prefix?.ok && (target === '/$2' || target === null)) {
        const value = normalisePath(prefix.value, 'Prefix');
        match = { path: { type: 'PathPrefix', value } };
        if (target !== null) rewrite = { type: 'ReplacePrefixMatch', replacePrefixMatch: '/' };
        this.report(
          id.owner,
          `${field}.path`,
          `converted to PathPrefix ${show(value)}${target === null ? '' : ' with ReplacePrefixMatch "/"'}: ${convertRule('use-regex').reason}`,
        );
      } else {
        const value = regexValue(checked.value);
        if (value === null) {
          this.report(
            id.owner,
            `${field}.path`,
            `${show(path)}: an alternation at the top, or a regex that is not sure to keep its meaning once anchored at ` +
              'both ends, is not converted; path left out',
          );
          return null;
        }
        match = { path: { type: 'RegularExpression', value } };
        this.report(
          id.owner,
          `${field}.path`,
          `converted to RegularExpression ${show(value)}: ${convertRule('use-regex').reason}`,
        );
        if (captures)
          this.report(
            id.owner,
            rewriteField,
            `${show(target)}: ${convertRule('rewrite-target').reason}; rewrite left out`,
          );
        else if (target !== null && target !== path) rewrite = { type: 'ReplaceFullPath', replaceFullPath: target };
      }
    } else {
      const checked = checkPath(path);
      if (!checked.ok) {
        this.report(id.owner, `${field}.path`, `${checked.message}; path left out`);
        return null;
      }
      const exact = type.value === 'Exact';
      match = { path: { type: exact ? 'Exact' : 'PathPrefix', value: normalisePath(checked.value, type.value) } };
      if (target !== null && target !== path) {
        if (captures)
          this.report(
            id.owner,
            rewriteField,
            `${show(target)}: ${convertRule('rewrite-target').reason}; rewrite left out`,
          );
        else rewrite = { type: 'ReplaceFullPath', replaceFullPath: target };
      }
    }
    const p = match.path as { type: string; value: string };
    return {
      key: `${p.type} ${p.value}`,
      match,
      filters: this.filters(s, rewrite),
      timeout: s.redirect ? null : s.timeout,
      extra: [],
    };
  }

  /** drafts reads a main Ingress into one draft per host. */
  drafts(id: Ident): Draft[] {
    const drafts = new Map<string, Draft>();
    const draftOf = (host: string) => {
      let d = drafts.get(host);
      if (!d) drafts.set(host, (d = { ingress: id, host, rules: [] }));
      return d;
    };
    const spec = id.ingress.spec ?? {};
    for (const [i, rule] of (spec.rules ?? []).entries()) {
      const field = `spec.rules[${i}]`;
      let host = CATCH_ALL;
      if (rule.host) {
        const checked = checkHost(rule.host);
        if (!checked.ok) {
          this.report(id.owner, `${field}.host`, `${checked.message}; rule left out`);
          continue;
        }
        host = checked.value;
        if (host.startsWith('*.') && !drafts.has(host))
          this.report(
            id.owner,
            `${field}.host`,
            `${show(host)}: an Ingress wildcard matches exactly one DNS label; a Gateway API wildcard hostname matches ` +
              'one or more',
          );
      }
      const draft = draftOf(host);
      for (const [j, p] of (rule.http?.paths ?? []).entries()) {
        const pf = `${field}.http.paths[${j}]`;
        if (this.resource(id, p.backend, `${pf}.backend`)) continue;
        const base = this.pathRule(id, p.path, p.pathType, pf);
        if (!base) continue;
        const backend = id.settings.redirect ? null : this.backend(id, p.backend, `${pf}.backend`);
        draft.rules.push({ ...base, backends: backend ? [backend] : [] });
        if (id.settings.appRoot !== null && base.key === 'PathPrefix /' && !id.settings.redirect)
          draft.rules.push({
            key: 'Exact /',
            match: { path: { type: 'Exact', value: '/' } },
            filters: [
              {
                type: 'RequestRedirect',
                requestRedirect: {
                  path: { type: 'ReplaceFullPath', replaceFullPath: id.settings.appRoot },
                  statusCode: 302,
                },
              },
            ],
            backends: [],
            timeout: null,
            extra: [],
          });
      }
    }
    // A resource default backend is left out whole, as the model leaves it (no `/` rule that would answer 500).
    if (spec.defaultBackend && !this.resource(id, spec.defaultBackend, 'spec.defaultBackend')) {
      // As ingress-nginx: the `/` of this Ingress's hosts (where no path of its own is `/`), or the catch-all's.
      const hosts = (spec.rules ?? []).length === 0 ? [CATCH_ALL] : [...drafts.keys()];
      const backend = id.settings.redirect ? null : this.backend(id, spec.defaultBackend, 'spec.defaultBackend');
      for (const host of hosts) {
        const draft = draftOf(host);
        if (draft.rules.some((r) => r.key === 'PathPrefix /')) continue;
        draft.rules.push({
          key: 'PathPrefix /',
          match: { path: { type: 'PathPrefix', value: '/' } },
          filters: this.filters(id.settings, null),
          backends: backend ? [{ ...backend }] : [],
          timeout: id.settings.redirect ? null : id.settings.timeout,
          extra: [],
        });
      }
    }
    return [...drafts.values()].filter((d) => d.rules.length > 0);
  }

  /** foldCanary adds a canary Ingress's backends to the rules of the drafts it shadows. */
  foldCanary(id: Ident, drafts: readonly Draft[]): void {
    const canary = id.settings.canary!;
    // Reported already, value by value (read-settings.ts).
    if (canary.leftOut) return;
    if (canary.header === null && canary.weight === null) {
      this.report(
        id.owner,
        'metadata.annotations.nginx.ingress.kubernetes.io/canary',
        'a canary without canary-weight or canary-by-header takes no traffic here; left out',
      );
      return;
    }
    for (const [i, rule] of (id.ingress.spec?.rules ?? []).entries()) {
      const host = rule.host ? (checkHost(rule.host).ok ? rule.host : null) : CATCH_ALL;
      for (const [j, p] of (rule.http?.paths ?? []).entries()) {
        const pf = `spec.rules[${i}].http.paths[${j}]`;
        const type = checkPathType(p.pathType);
        const path = checkPath(p.path ?? '/');
        const key =
          type.ok && path.ok
            ? `${type.value === 'Exact' ? 'Exact' : 'PathPrefix'} ${normalisePath(path.value, type.value)}`
            : null;
        const main = drafts
          .filter((d) => d.host === host && d.ingress.className === id.className)
          .flatMap((d) => d.rules)
          .find((r) => r.key === key && r.backends.length > 0);
        if (!main) {
          this.report(id.owner, pf, 'no main Ingress serves this host and path with a backend; canary path left out');
          continue;
        }
        if (this.resource(id, p.backend, `${pf}.backend`)) continue;
        const backend = this.backend(id, p.backend, `${pf}.backend`);
        if (!backend) continue;
        const mains = main.backends.map((b) => ({ ...b }));
        if (canary.header !== null) {
          const header = (value: string) => ({
            ...main.match,
            headers: [{ type: 'Exact', name: canary.header, value }],
          });
          main.extra.push({
            ...main,
            match: header(canary.headerValue ?? 'always'),
            backends: [{ ...backend }],
            extra: [],
          });
          if (canary.headerValue === null && canary.weight !== null)
            main.extra.push({ ...main, match: header('never'), backends: mains, extra: [] });
        }
        if (canary.weight !== null && canary.weight > 0) {
          for (const b of main.backends) b.weight = canary.total - canary.weight;
          main.backends.push({ ...backend, weight: canary.weight });
        }
      }
    }
  }
}

function redirectJson(r: Redirect): Json {
  return {
    ...(r.scheme ? { scheme: r.scheme } : {}),
    ...(r.hostname ? { hostname: r.hostname } : {}),
    ...(r.path ? { path: { type: 'ReplaceFullPath', replaceFullPath: r.path } } : {}),
    ...(r.port ? { port: r.port } : {}),
    statusCode: r.statusCode,
  };
}

function ruleJson(rule: Rule): Json[] {
  const own: Json = {
    matches: [rule.match],
    ...(rule.filters.length > 0 ? { filters: rule.filters } : {}),
    ...(rule.backends.length > 0
      ? {
          backendRefs: rule.backends.map((b) => ({
            name: b.name,
            port: b.port,
            ...(b.weight === undefined ? {} : { weight: b.weight }),
          })),
        }
      : {}),
    ...(rule.timeout !== null && rule.backends.length > 0 ? { timeouts: { backendRequest: rule.timeout } } : {}),
  };
  return [...rule.extra.flatMap(ruleJson), own];
}

/** listenerName names a host's HTTPS listener: `https-` and the host's labels, or its index when that is too long. */
function listenerName(host: string, index: number): string {
  const name = `https-${host.replace('*', 'wildcard').replaceAll('.', '-')}`;
  return name.length <= 63 ? name : `https-${index}`;
}

/** HASH_LENGTH is how many hex digits of sha256 tell apart names shortened to fit. */
const HASH_LENGTH = 8;

/**
 * objectName is `base-suffix` (`base` alone when suffix is empty) when that is a valid object name. When it is not
 * (a label longer than 63, or the whole longer than 253), the base is shortened and the first hex digits of the full
 * name's sha256 go between it and the suffix, so that names too long to join stay valid, distinct and the same from
 * run to run. Should the suffix not fit even so, the whole name is shortened before the hash.
 */
export function objectName(base: string, suffix = ''): string {
  const full = suffix === '' ? base : `${base}-${suffix}`;
  if (checkObjectName(full).ok) return full;
  const hash = createHash('sha256').update(full).digest('hex').slice(0, HASH_LENGTH);
  // A name starts and ends with a letter or digit, and so does each of its labels.
  const head = (s: string, n: number) => {
    // trimmed by a loop, not /[-.]+$/ (a regex whose every start position scans the run again: quadratic)
    let end = Math.min(n, s.length);
    while (end > 0 && (s[end - 1] === '-' || s[end - 1] === '.')) end--;
    return s.slice(0, end);
  };
  const join = (...parts: string[]) => parts.filter((p) => p !== '').join('-');
  // At most 253 + 253 tries of a name of at most 253 + 253 + 9 characters: bounded, whatever the input.
  for (let keep = Math.min(base.length, 253); keep >= 0; keep--) {
    const name = join(head(base, keep), hash, suffix);
    if (checkObjectName(name).ok) return name;
  }
  for (let keep = Math.min(full.length, 253); keep >= 0; keep--) {
    const name = join(head(full, keep), hash);
    if (checkObjectName(name).ok) return name;
  }
  return hash;
}

/** routeName names an Ingress's route for one host. */
function routeName(ingress: string, host: string, several: boolean): string {
  if (!several) return ingress;
  return objectName(ingress, host === CATCH_ALL ? 'catch-all' : host.replace('*', 'wildcard'));
}

/**
 * convertIngresses turns the snapshot's Ingresses into a GatewayClass, a Gateway per IngressClass in use, HTTPRoutes
 * and ReferenceGrants, and lists what they cannot express.
 */
export function convertIngresses(snapshot: Snapshot, options: ConvertOptions = defaultConvertOptions): ConvertResult {
  const c = new Converter(snapshot);
  const controllers = new Map(snapshot.ingressClasses.map((k) => [k.metadata?.name, k.spec?.controller]));
  const idents = c.identify((className, owner) => {
    const controller = controllers.get(className);
    if (controller === undefined || controller === options.controllerClass) return true;
    c.report(
      owner,
      'spec.ingressClassName',
      `IngressClass ${show(className)} is another controller's (${show(controller)}, not ` +
        `${show(options.controllerClass)}); Ingress left out`,
    );
    return false;
  });
  const mains = idents.filter((id) => !isCanaryIngress(id.ingress));
  const drafts = mains.flatMap((id) => c.drafts(id));
  for (const id of idents.filter((i) => isCanaryIngress(i.ingress))) c.foldCanary(id, drafts);

  const classes = [...new Set(mains.map((m) => m.className))].sort();
  const objects: KubeObject[] = [];
  const grants: KubeObject[] = [];
  const routes: KubeObject[] = [];
  const gateways: KubeObject[] = [];
  for (const className of classes) {
    const members = mains.filter((m) => m.className === className);
    const classDrafts = drafts.filter((d) => d.ingress.className === className);
    const namespaces = [...new Set(members.map((m) => m.namespace))].sort();
    const gwNamespace = options.gatewayNamespace ?? (namespaces.length === 1 ? namespaces[0]! : 'default');
    const gwName =
      classes.length === 1 ? options.gatewayName : objectName(options.gatewayName, className || 'no-class');

    // TLS hosts: the oldest Ingress to name a host gives its certificate, as ingress-nginx settles it.
    const tls = new Map<string, Tls>();
    for (const m of members)
      for (const [i, t] of (m.ingress.spec?.tls ?? []).entries()) {
        const secret = t.secretName === undefined ? null : checkObjectName(t.secretName);
        for (const [j, raw] of (t.hosts ?? []).entries()) {
          const host = checkHost(raw);
          if (!host.ok) {
            c.report(m.owner, `spec.tls[${i}].hosts[${j}]`, `${host.message}; left out`);
            continue;
          }
          if (secret === null || !secret.ok) {
            c.report(
              m.owner,
              `spec.tls[${i}].secretName`,
              `${secret ? secret.message : 'is not set'}: ingress-nginx serves the default certificate; no HTTPS listener for ${show(host.value)}`,
            );
            continue;
          }
          if (!tls.has(host.value)) tls.set(host.value, { namespace: m.namespace, secretName: secret.value });
        }
      }
    const tlsHosts = [...tls.keys()].sort();
    const sections = new Map(tlsHosts.map((h, i) => [h, listenerName(h, i)]));

    const parentRef = (sectionName: string, routeNs: string): Json => ({
      name: gwName,
      ...(routeNs === gwNamespace ? {} : { namespace: gwNamespace }),
      sectionName,
    });
    const trailingReported = new Set<string>();
    for (const d of classDrafts) {
      const id = d.ingress;
      const several = new Set(drafts.filter((x) => x.ingress === id).map((x) => x.host)).size > 1;
      const name = routeName(id.name, d.host, several);
      const section = d.host === CATCH_ALL ? undefined : sections.get(d.host);
      const redirect = id.settings.forceSslRedirect || (section !== undefined && id.settings.sslRedirect !== false);
      const rules = d.rules.flatMap(ruleJson);
      const hostnames = d.host === CATCH_ALL ? {} : { hostnames: [d.host] };
      const parents = [
        ...(section === undefined ? [] : [parentRef(section, id.namespace)]),
        ...(redirect ? [] : [parentRef('http', id.namespace)]),
      ];
      if (parents.length > 0) routes.push(...split(name, id.namespace, { parentRefs: parents, ...hostnames }, rules));
      if (redirect) {
        const redirects = d.rules.map((r) => ({
          matches: [r.match],
          filters: [{ type: 'RequestRedirect', requestRedirect: { scheme: 'https', statusCode: HTTPS_REDIRECT_CODE } }],
        }));
        routes.push(
          ...split(
            objectName(name, 'https-redirect'),
            id.namespace,
            { parentRefs: [parentRef('http', id.namespace)], ...hostnames },
            redirects,
          ),
        );
        if (!id.settings.preserveTrailingSlash && !trailingReported.has(id.owner)) {
          trailingReported.add(id.owner);
          const key = id.settings.forceSslRedirect
            ? 'force-ssl-redirect'
            : id.settings.sslRedirect
              ? 'ssl-redirect'
              : null;
          c.report(
            id.owner,
            key === null ? 'spec.tls' : `metadata.annotations.nginx.ingress.kubernetes.io/${key}`,
            `${key === null ? 'the HTTPS redirect of a TLS host (ssl-redirect is on by default): ' : ''}${TRAILING_SLASH}`,
          );
        }
      }
    }

    const routeNamespaces = [...new Set(classDrafts.map((d) => d.ingress.namespace))].sort();
    const others = routeNamespaces.filter((ns) => ns !== gwNamespace);
    const allowedRoutes =
      others.length === 0
        ? { namespaces: { from: 'Same' } }
        : {
            namespaces: {
              from: 'Selector',
              selector: {
                matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: routeNamespaces }],
              },
            },
          };
    const listeners: Json[] = [{ name: 'http', protocol: 'HTTP', port: 80, allowedRoutes }];
    for (const host of tlsHosts) {
      const t = tls.get(host)!;
      listeners.push({
        name: sections.get(host),
        protocol: 'HTTPS',
        port: 443,
        hostname: host,
        tls: {
          mode: 'Terminate',
          certificateRefs: [
            { kind: 'Secret', name: t.secretName, ...(t.namespace === gwNamespace ? {} : { namespace: t.namespace }) },
          ],
        },
        allowedRoutes,
      });
    }
    gateways.push({
      apiVersion: `${GATEWAY_GROUP}/v1`,
      kind: 'Gateway',
      metadata: { name: gwName, namespace: gwNamespace },
      spec: { gatewayClassName: options.gatewayClassName, listeners },
    } as KubeObject);

    // A Secret in another namespace than the Gateway needs that namespace's consent.
    const foreign = new Map<string, Set<string>>();
    for (const t of tls.values())
      if (t.namespace !== gwNamespace)
        foreign.set(t.namespace, (foreign.get(t.namespace) ?? new Set()).add(t.secretName));
    for (const [ns, secrets] of [...foreign].sort(([a], [b]) => compare(a, b)))
      grants.push({
        apiVersion: `${GATEWAY_GROUP}/v1beta1`,
        kind: 'ReferenceGrant',
        metadata: { name: objectName(gwName, 'certificates'), namespace: ns },
        spec: {
          from: [{ group: GATEWAY_GROUP, kind: 'Gateway', namespace: gwNamespace }],
          to: [...secrets].sort().map((name) => ({ group: '', kind: 'Secret', name })),
        },
      } as KubeObject);
  }

  if (options.emitGatewayClass && classes.length > 0)
    objects.push({
      apiVersion: `${GATEWAY_GROUP}/v1`,
      kind: 'GatewayClass',
      metadata: { name: options.gatewayClassName },
      spec: { controllerName: options.controllerName },
    } as KubeObject);
  const key = (o: KubeObject) => `${o.metadata?.namespace}/${o.metadata?.name}`;
  const sort = (list: KubeObject[]) => list.sort((a, b) => compare(key(a), key(b)));
  objects.push(...sort(gateways), ...sort(grants), ...sort(routes));
  return { objects, unexpressed: c.unexpressed };
}

/** MAX_RULES is the CRD's maxItems for an HTTPRoute's rules. */
const MAX_RULES = 16;

/**
 * split makes one HTTPRoute of the rules, or several (`name`, `name-2`, …) when they are more than one route holds:
 * precedence is the same across routes of one hostname, so the split changes nothing served.
 */
function split(name: string, namespace: string, spec: Json, rules: readonly Json[]): KubeObject[] {
  const routes: KubeObject[] = [];
  for (let i = 0; i < rules.length; i += MAX_RULES) {
    const part = i === 0 ? name : objectName(name, String(i / MAX_RULES + 1));
    routes.push(route(part, namespace, { ...spec, rules: rules.slice(i, i + MAX_RULES) }));
  }
  return routes;
}

function route(name: string, namespace: string, spec: Json): KubeObject {
  return { apiVersion: `${GATEWAY_GROUP}/v1`, kind: 'HTTPRoute', metadata: { name, namespace }, spec } as KubeObject;
}
