/**
 * From parsed annotations to the model: the features each route of an Ingress gets, and the
 * upstream variants (hash, least_conn, ClusterIP) its balancing annotations ask for.
 */
import type { Report } from '../backends.js';
import type {
  BalancedUpstream,
  ErrorLocation,
  ExternalAuthSettings,
  GlobalConfig,
  Problem,
  Upstream,
} from '../nginx-model.js';
import { DEFAULT_PROXY_HOST, NO_EXTRAS, type LocationExtras, type RouteFeatures } from '../locations.js';
import type { Service } from '../snapshot.js';
import { checkIp } from '../validate.js';
import { modSecurityRules } from '../modsecurity-policy.js';
import { AFFINITY_KEY_PREFIX, type HttpExtras, stableId } from './http-extras.js';
import type { ExternalAuthAnnotations, IngressAnnotations } from './types.js';

/** Variant is how an upstream name balances over its base upstream. */
export interface Variant {
  readonly base: string;
  readonly hashKey: string | null;
  readonly leastConn: boolean;
  readonly clusterIp: boolean;
}

/** sameVariant compares two variants field by field. */
export const sameVariant = (a: Variant, b: Variant): boolean =>
  a.base === b.base && a.hashKey === b.hashKey && a.leastConn === b.leastConn && a.clusterIp === b.clusterIp;

/** UpstreamVariants hands out upstream names for balancing policies; balancedUpstreams builds them at the end. */
export class UpstreamVariants {
  private readonly variants = new Map<string, Variant>();

  constructor(private readonly config: GlobalConfig) {}

  /** entries are the names handed out, with their variants. */
  get entries(): ReadonlyMap<string, Variant> {
    return this.variants;
  }

  /** name gives the upstream to proxy to for `base` under a policy: `base` itself when it is the default one. */
  name(
    base: string,
    policy: { hashKey: string | null; hashName?: string; leastConn: boolean | null; clusterIp: boolean },
  ): string {
    const globalLeast = this.config.loadBalance === 'least_conn';
    const leastConn = policy.hashKey === null && (policy.leastConn ?? globalLeast);
    const balance = leastConn !== globalLeast ? (leastConn ? '_lc' : '_rr') : '';
    const hashed = policy.hashKey ? `_${policy.hashName ?? `h${stableId(policy.hashKey)}`}` : balance;
    const suffix = `${policy.clusterIp ? '_svc' : ''}${hashed}`;
    const name = `${base}${suffix}`;
    this.variants.set(name, { base, hashKey: policy.hashKey, leastConn, clusterIp: policy.clusterIp });
    return name;
  }
}

/** KeptUpstream is a balanced upstream with what it was made from. */
export interface KeptUpstream {
  readonly base: Upstream;
  readonly hashKey: string | null;
  readonly leastConn: boolean;
  readonly upstream: BalancedUpstream;
}

/**
 * balancedUpstream is the upstream `name` proxies to, with its endpoints (or ClusterIP) and balancing method: `known`
 * when made from the same base object under the same policy (the same upstream object, so render can reuse its
 * text), null when its base upstream is gone. ClusterIP problems go to `problems`.
 */
export function balancedUpstream(
  name: string,
  v: Variant,
  base: Upstream | undefined,
  services: ReadonlyMap<string, Service>,
  known: KeptUpstream | undefined,
  problems: Problem[],
): KeptUpstream | null {
  if (!base) return null;
  if (known && !v.clusterIp && known.base === base && known.hashKey === v.hashKey && known.leastConn === v.leastConn)
    return known;
  const upstream = {
    ...base,
    name,
    endpoints: v.clusterIp ? clusterIp(services, base, problems) : base.endpoints,
    hashKey: v.hashKey,
    leastConn: v.leastConn,
  };
  return { base, hashKey: v.hashKey, leastConn: v.leastConn, upstream };
}

/** plainVariant is how an upstream no annotation touched (a default backend, say) balances: the ConfigMap's way. */
export function plainVariant(name: string, config: GlobalConfig): Variant {
  return { base: name, hashKey: null, leastConn: config.loadBalance === 'least_conn', clusterIp: false };
}

function clusterIp(services: ReadonlyMap<string, Service>, base: Upstream, problems: Problem[]): Upstream['endpoints'] {
  const service = services.get(base.service);
  const port = (service?.spec?.ports ?? []).find(
    (p) => String(p.port) === base.servicePort || p.name === base.servicePort,
  );
  const ip = checkIp(service?.spec?.clusterIP);
  if (!ip.ok || !port?.port) {
    const [namespace = '', name = ''] = base.service.split('/');
    problems.push({
      kind: 'Service',
      namespace,
      name,
      field: 'spec.clusterIP',
      message: 'service-upstream needs a ClusterIP; using the endpoints',
    });
    return base.endpoints;
  }
  return [
    { address: ip.value.family === 6 ? `[${ip.value.address}]:${port.port}` : `${ip.value.address}:${port.port}` },
  ];
}

/** FeatureContext is what turning annotations into route features needs from buildModel. */
export interface FeatureContext {
  readonly config: GlobalConfig;
  readonly extras: HttpExtras;
  readonly variants: UpstreamVariants;
  /** the upstream that renders custom-http-errors: the default-backend annotation's, else the flag's */
  readonly errorBackend: string | null;
  /** the Lua balancer serves: a location may compute values per request with Lua */
  readonly lua: boolean;
  readonly report: Report;
}

/** wafOf is ModSecurity in the Ingress's locations, from its annotations and the ConfigMap, or null when off. */
function wafOf(a: IngressAnnotations, config: GlobalConfig): LocationExtras['waf'] {
  const m = a.modsecurity;
  if (!m?.on) return null;
  return {
    coreRules: m.coreRules ?? config.enableOwaspModsecurityCrs,
    transactionId: m.transactionId ?? '$request_id',
    ingressPrefix: '',
    rules: modSecurityRules(m.snippet ?? []),
  };
}

/**
 * tracingOf is whether this Ingress's locations are traced: its annotations over the ConfigMap's keys. Spans are made
 * by the Lua balancer's phases: without it, an annotation asking for them is reported and nothing is traced.
 */
function tracingOf(a: IngressAnnotations, ctx: FeatureContext): LocationExtras['tracing'] {
  const enabled = a.tracing.enabled ?? ctx.config.enableOpentelemetry;
  if (!enabled) return null;
  if (!ctx.lua) {
    if (a.tracing.enabled)
      ctx.report(
        'metadata.annotations.nginx.ingress.kubernetes.io/enable-opentelemetry',
        'spans need the Lua balancer (--dynamic-backends); not traced',
      );
    return null;
  }
  return {
    trustIncoming: a.tracing.trustIncoming ?? ctx.config.opentelemetryTrustIncomingSpan,
    operationName: a.tracing.operationName,
  };
}

/**
 * ownProxyHeaders is what an HTTP location sets beside the http-level proxy headers, or null when it sets nothing of
 * its own.
 */
function ownProxyHeaders(a: IngressAnnotations): LocationExtras['proxyHeaders'] {
  // A snippet's proxy_set_header would otherwise hide the http-level ones, as any of ours does.
  const snippetSets = (a.snippets.configuration ?? []).some((d) => d.name === 'proxy_set_header');
  if (
    a.upstreamVhost === null &&
    a.forwardedPrefix === null &&
    !a.externalAuth?.responseHeaders.length &&
    a.authTls === null &&
    !snippetSets
  )
    return null;
  return {
    host: a.upstreamVhost ?? DEFAULT_PROXY_HOST,
    forwardedPrefix: a.forwardedPrefix,
    clientCertificate: a.authTls && { pass: a.authTls.passCertificate },
  };
}

/**
 * externalAuthSettings names the variables auth-response-headers copy through (none for gRPC, which has no
 * proxy_set_header).
 */
function externalAuthSettings(a: ExternalAuthAnnotations, grpc: boolean): ExternalAuthSettings {
  const headers = grpc ? [] : a.responseHeaders;
  return {
    url: a.url,
    host: a.host,
    method: a.method,
    signin: a.signin,
    alwaysSetCookie: a.alwaysSetCookie,
    responseHeaders: headers.map((header, i) => ({
      header,
      source: `$upstream_http_${header.toLowerCase().replace(/-/g, '_')}`,
      variable: `$ia_auth_header_${i}`,
    })),
  };
}

/**
 * IngressFeatures are one Ingress's annotations applied: the features of each of its routes
 * and the upstream each of its backends resolves to.
 */
export class IngressFeatures {
  private readonly shared: Omit<LocationExtras, 'setCookie' | 'cookieExpires'>;
  private readonly grpc: boolean;

  constructor(
    readonly annotations: IngressAnnotations,
    owner: string,
    private readonly ctx: FeatureContext,
  ) {
    const a = annotations;
    this.grpc = a.backendProtocol === 'grpc' || a.backendProtocol === 'grpcs';
    const vhost = a.upstreamVhost === null ? null : { host: a.upstreamVhost };
    // A canary's own annotations are ignored but for balancing, as in ingress-nginx; a denied Ingress proxies nothing.
    const applied = !a.canary && !a.denied;
    if (this.grpc && a.forwardedPrefix !== null && applied)
      ctx.report('metadata.annotations.nginx.ingress.kubernetes.io/x-forwarded-prefix', 'not applied to gRPC backends');
    const timeouts = a.proxy && {
      connectTimeout: a.proxy.connectTimeout,
      sendTimeout: a.proxy.sendTimeout,
      readTimeout: a.proxy.readTimeout,
    };
    const errorPages: ErrorLocation[] | null =
      this.grpc || a.customHttpErrors.length === 0 || ctx.errorBackend === null
        ? null
        : a.customHttpErrors.map((code) => ({
            name: `@custom_${ctx.errorBackend}_${code}`,
            code,
            upstream: ctx.errorBackend!,
          }));
    if (a.customHttpErrors.length > 0 && errorPages === null && applied) {
      ctx.report(
        'metadata.annotations.nginx.ingress.kubernetes.io/custom-http-errors',
        this.grpc
          ? 'not applied to gRPC backends'
          : 'no default backend (annotation default-backend or --default-backend-service) to render the errors; the ' +
              "Service's own pages are passed through",
      );
    }
    if (this.grpc && a.externalAuth?.responseHeaders.length && applied) {
      ctx.report(
        'metadata.annotations.nginx.ingress.kubernetes.io/auth-response-headers',
        'not applied to gRPC backends',
      );
    }
    this.shared = !applied
      ? NO_EXTRAS
      : {
          redirect: a.redirect,
          appRoot: a.rewrite.appRoot,
          client: a.client,
          proxy: this.grpc ? null : a.proxy,
          grpc: this.grpc && timeouts && Object.values(timeouts).some((t) => t !== null) ? timeouts : null,
          proxyHeaders: this.grpc ? null : ownProxyHeaders(a),
          grpcHeaders: this.grpc ? vhost : null,
          access: a.access,
          auth: a.auth && { realm: a.auth.realm, file: ctx.extras.authFile(a.auth.secretId, a.auth.content) },
          externalAuth: a.externalAuth && externalAuthSettings(a.externalAuth, this.grpc),
          requireClientCertificate: a.authTls?.verifyClient === 'on',
          proxySsl: a.proxySsl && {
            caFile: a.proxySsl.caPem === null ? null : ctx.extras.caFile(a.proxySsl.secretId!, a.proxySsl.caPem),
            certificateFile:
              a.proxySsl.clientPem === null
                ? null
                : ctx.extras.clientCertificateFile(a.proxySsl.secretId!, a.proxySsl.clientPem),
            verify: a.proxySsl.verify,
            depth: a.proxySsl.depth,
            name: a.proxySsl.name,
            serverName: a.proxySsl.serverName,
            protocols: a.proxySsl.protocols,
            ciphers: a.proxySsl.ciphers,
          },
          ...ctx.extras.limits(owner, a.rateLimit),
          cors: ctx.extras.cors(a.cors),
          errorPages,
          snippet: a.snippets.configuration,
          waf: wafOf(a, ctx.config),
          tracing: tracingOf(a, ctx),
        };
  }

  /** regex says whether this Ingress's ImplementationSpecific paths are regular expressions. */
  get regex(): boolean {
    return this.annotations.rewrite.useRegex || this.annotations.rewrite.target !== null;
  }

  /** forRoute gives the features of the route at `path`, regex or not. */
  forRoute(path: string, regex: boolean): RouteFeatures {
    const a = this.annotations;
    const forcesRegex = a.rewrite.useRegex || (a.rewrite.target !== null && a.rewrite.target !== path);
    if (a.denied) {
      // It matches what it would have matched (so it keeps its paths), and does nothing but answer 503.
      return {
        forcesRegex,
        rewriteTarget: null,
        protocol: 'http',
        sslRedirect: a.rewrite.sslRedirect,
        forceSslRedirect: a.rewrite.forceSslRedirect,
        preserveTrailingSlash: a.rewrite.preserveTrailingSlash ?? false,
        extras: NO_EXTRAS,
        denied: true,
      };
    }
    const cookie = a.affinity ? this.ctx.extras.affinity(a.affinity, regex ? '/' : path, this.ctx.lua) : null;
    return {
      forcesRegex,
      rewriteTarget: a.rewrite.target,
      protocol: a.backendProtocol,
      sslRedirect: a.rewrite.sslRedirect,
      forceSslRedirect: a.rewrite.forceSslRedirect,
      preserveTrailingSlash: a.rewrite.preserveTrailingSlash ?? false,
      extras: { ...this.shared, setCookie: cookie?.setCookie ?? null, cookieExpires: cookie?.cookieExpires ?? null },
      denied: false,
    };
  }

  /** upstream gives the upstream name to proxy to for a resolved Service port, under this Ingress's balancing. */
  upstream(base: string): string {
    const a = this.annotations;
    const affinityKey = a.affinity ? this.ctx.extras.affinityKey(a.affinity.cookieName).key : null;
    const hashKey = affinityKey ?? a.balance.hashBy;
    // cookie_<name>, or cookied_<cookieId>: upstream names keep to letters, digits, `_` and `-`
    const hashName = affinityKey ? `cookie${affinityKey.slice(AFFINITY_KEY_PREFIX.length)}` : undefined;
    return this.ctx.variants.name(base, {
      hashKey,
      ...(hashName ? { hashName } : {}),
      leastConn: a.balance.leastConn,
      clusterIp: a.balance.serviceUpstream,
    });
  }
}
