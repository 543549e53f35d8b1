import { createHash } from 'node:crypto';
import type {
  ExternalAuth,
  ExternalAuthSettings,
  Location,
  LocationInfo,
  PathType,
  RouteLabels,
} from './nginx-model.js';
import { compare } from './backends.js';

/** LocationExtras are the Location fields annotations decide, copied into every location of a route. */
export type LocationExtras = Pick<
  Location,
  | 'redirect'
  | 'appRoot'
  | 'client'
  | 'proxy'
  | 'grpc'
  | 'proxyHeaders'
  | 'grpcHeaders'
  | 'access'
  | 'auth'
  | 'limitRequests'
  | 'limitConnections'
  | 'cors'
  | 'setCookie'
  | 'cookieExpires'
  | 'errorPages'
  | 'snippet'
  | 'waf'
  | 'requireClientCertificate'
  | 'proxySsl'
  | 'tracing'
> & { readonly externalAuth: ExternalAuthSettings | null };

/** RouteFeatures is what an Ingress's annotations ask of one of its routes. */
export interface RouteFeatures {
  /** the Ingress uses regex paths (use-regex, or a rewrite-target): its host's locations all become regexes */
  readonly forcesRegex: boolean;
  readonly rewriteTarget: string | null;
  readonly protocol: 'http' | 'https' | 'grpc' | 'grpcs';
  /** ssl-redirect of the Ingress, null for the ConfigMap's */
  readonly sslRedirect: boolean | null;
  /** force-ssl-redirect of the Ingress, null for the ConfigMap's */
  readonly forceSslRedirect: boolean | null;
  /** preserve-trailing-slash of the Ingress */
  readonly preserveTrailingSlash: boolean;
  readonly extras: LocationExtras;
  /** a security annotation could not be applied: the route answers 503 with no extras (see Location.denied) */
  readonly denied: boolean;
}

/** DEFAULT_PROXY_HOST is the Host nginx.conf sends upstream unless upstream-vhost says otherwise. */
export const DEFAULT_PROXY_HOST = '$best_http_host';

/** NO_EXTRAS is a route that annotations do not touch. */
export const NO_EXTRAS: LocationExtras = Object.freeze({
  redirect: null,
  appRoot: null,
  client: null,
  proxy: null,
  grpc: null,
  proxyHeaders: null,
  grpcHeaders: null,
  access: null,
  auth: null,
  externalAuth: null,
  requireClientCertificate: false,
  proxySsl: null,
  limitRequests: null,
  limitConnections: null,
  cors: null,
  setCookie: null,
  cookieExpires: null,
  errorPages: null,
  snippet: null,
  waf: null,
  tracing: null,
});

/**
 * externalAuthAt names the locations auth-url needs beside the location `modifier match`:
 * unique in the server, as that pair is, and stable while the location is.
 */
function externalAuthAt(
  settings: ExternalAuthSettings,
  modifier: Location['modifier'],
  match: string,
  hsts: boolean,
): ExternalAuth {
  const id = createHash('sha256').update(`${modifier} ${match}`).digest('hex').slice(0, 16);
  return { ...settings, location: `/_external-auth-${id}`, signinLocation: `@ia_signin_${id}`, hsts };
}

/** routeLabels are a route's request-metric labels, named by a hash of them and the Ingress path. */
function routeLabels(info: LocationInfo, path: string): RouteLabels {
  const { namespace, ingressName, serviceName } = info;
  const id = createHash('sha256')
    .update(JSON.stringify([namespace, ingressName, serviceName, path]))
    .digest('hex')
    .slice(0, 16);
  return { id, namespace, ingressName, serviceName };
}

/** Route is one Ingress path on one host, after validation, before it becomes nginx locations. */
export interface Route {
  readonly path: string;
  /** ImplementationSpecific: `path` is a regular expression */
  readonly pathType: PathType;
  readonly upstream: string | null;
  readonly status: 404 | 503 | null;
  readonly ingress: string | null;
  readonly features: RouteFeatures | null;
  /** the Ingress and the Service its path names, for error backends */
  readonly info?: LocationInfo;
  /** the default-backend annotation's Service answers in place of the missing one */
  readonly customDefaultBackend?: boolean;
  /** set when a canary Ingress shares the route: its upstream and the variable choosing between them */
  readonly canary?: { readonly upstream: string; readonly variable: string };
}

/** HostOptions are what a host decides for all its locations. */
export interface HostOptions {
  readonly tls: boolean;
  readonly sslRedirect: boolean;
  readonly forceSslRedirect: boolean;
  /** the server sends HSTS, so a location adding headers of its own must repeat it */
  readonly hsts: boolean;
}

/**
 * normalisePath gives the path an Ingress rule means: a Prefix's trailing `/` is not part of it
 * (Ingress v1: `/foo/` and `/foo` match the same requests); Exact and regex paths are taken as written.
 */
export function normalisePath(path: string, pathType: PathType): string {
  if (pathType !== 'Prefix' || path === '/') return path;
  // A loop, not /\/+$/: that regex retries every run of slashes from each start, quadratic on `////…x`.
  let end = path.length;
  while (end > 0 && path[end - 1] === '/') end--;
  return path.slice(0, end) || '/';
}

const escapeRegex = (path: string) => path.replace(/[.*+?^${}()|[\]\\]/g, (c) => `\\${c}`);

/**
 * toLocations turns a host's routes into nginx locations with Ingress v1 matching: a Prefix
 * `/foo` is element-wise, so it becomes `location = /foo` and `location /foo/` (never the bare
 * `/foo`, which nginx would let match `/foobar`); an Exact path wins over a Prefix's exact half.
 * When an Ingress on the host uses regex paths, every path becomes a regex location, longest
 * first, as ingress-nginx does; plain Prefix paths keep their meaning there as `^/foo(?:/|$)`.
 * Sorted Exact first, then regexes, then longest first, so the file reads in the order the rules apply.
 */
export function toLocations(routes: readonly Route[], host: HostOptions): Location[] {
  const regexHost = routes.some((r) => r.features?.forcesRegex);
  const exact = new Set(routes.filter((r) => r.pathType === 'Exact').map((r) => r.path));
  const locations: Location[] = [];
  const add = (route: Route, modifier: Location['modifier'], match: string) => {
    const f = route.features;
    const extras = f?.extras ?? NO_EXTRAS;
    const redirect = f ? (f.sslRedirect ?? host.sslRedirect) : host.sslRedirect;
    const grpc = f?.protocol === 'grpc' || f?.protocol === 'grpcs';
    const denied = f?.denied ?? false;
    // A denied location proxies nowhere, whatever else reached the route (a canary, say).
    const target = denied ? null : (route.canary?.variable ?? route.upstream);
    // rewrite-target replaces the URI when the location's own pattern matches (as ingress-nginx's `rewrite
    // "(?i)path"`).
    const pattern =
      modifier === '~*'
        ? `(?i)${match}`
        : modifier === '~'
          ? match
          : `^${escapeRegex(match)}${modifier === '=' ? '$' : ''}`;
    const rewrite =
      f?.rewriteTarget && f.rewriteTarget !== route.path ? { regex: pattern, replacement: f.rewriteTarget } : null;
    locations.push({
      modifier,
      match,
      path: route.path,
      pathType: route.pathType,
      upstream: route.upstream,
      status: route.status,
      sslRedirect: (f?.forceSslRedirect ?? host.forceSslRedirect) || (host.tls && redirect),
      preserveTrailingSlash: f?.preserveTrailingSlash ?? false,
      ingress: route.ingress,
      ...extras,
      // error backends are told the Ingress, and so is ModSecurity's audit record (its transaction id names it)
      info:
        extras.errorPages !== null || route.customDefaultBackend || extras.waf !== null ? (route.info ?? null) : null,
      route: route.info ? routeLabels(route.info, route.path) : null,
      waf: extras.waf && { ...extras.waf, ingressPrefix: `${route.ingress ?? '-/-'}/` },
      customDefaultBackend: route.customDefaultBackend ?? false,
      externalAuth: extras.externalAuth && externalAuthAt(extras.externalAuth, modifier, match, host.hsts),
      appRoot: match === '/' || match === '^/' ? extras.appRoot : null,
      rewrite: denied ? null : rewrite,
      denied,
      pass:
        target === null || extras.redirect
          ? null
          : {
              grpc,
              url: `${f?.protocol ?? 'http'}://${target}`,
              // proxy-ssl-verify: an upstream without keepalive (a cached connection is not verified again)
              balancedUrl: `${f?.protocol ?? 'http'}://${extras.proxySsl?.verify && (f?.protocol === 'https' || f?.protocol === 'grpcs') ? 'upstream_balancer_tls' : 'upstream_balancer'}`,
              upstreamName: target,
              canary: route.canary?.upstream ?? null,
            },
      // Any add_header of the location's own (CORS, the affinity or auth cookie, a snippet's) hides the server's, and
      // a snippet's proxy_hide_header the server's hiding of the backend's HSTS header.
      hsts:
        host.hsts &&
        (extras.cors !== null ||
          extras.setCookie !== null ||
          extras.externalAuth !== null ||
          (extras.snippet ?? []).some((d) => d.name === 'add_header' || d.name === 'proxy_hide_header')),
    });
  };
  for (const route of routes) {
    if (route.pathType === 'ImplementationSpecific') add(route, '~*', `^${route.path}`);
    else if (route.pathType === 'Exact') add(route, '=', route.path);
    else if (route.path === '/') add(route, '', '/');
    else if (regexHost) add(route, '~', `^${escapeRegex(route.path)}(?:/|$)`);
    else {
      if (!exact.has(route.path)) add(route, '=', route.path);
      add(route, '', `${route.path}/`);
    }
  }
  const rank = (l: Location) => (l.modifier === '=' ? 0 : l.modifier === '' ? 2 : 1);
  return locations.sort(
    (a, b) =>
      rank(a) - rank(b) ||
      // Regex locations are tried in file order: longest Ingress path first, as ingress-nginx sorts them.
      (rank(a) === 1 ? b.path.length - a.path.length : b.match.length - a.match.length) ||
      compare(a.match, b.match),
  );
}
