/**
 * Location profiles (issue 29, "Locations become profiles"): what a location still needs as nginx directives once the
 * Ingress path router (lua/ingress_actors/ingress_router.lua, src/model/ingress-routes.ts) picks it per request and
 * sets its per-request values as variables. NOT WIRED IN YET: nothing renders profiles into nginx.conf; the census
 * below measures what they would save (bench/profiles.ts).
 *
 * A profile is keyed by the text the real `location` and `external-auth` partials write for the location after each
 * per-request field is replaced by a fixed placeholder (PER_REQUEST_FIELDS), not by a hand-picked list of the fields
 * that matter: a field the template prints and this file does not name stays in the text, so it splits profiles
 * instead of being merged silently. Two locations with one key have the same text, placeholders aside; the text is
 * formatted against the model's root settings (`@root`), so keys compare within one configuration's settings.
 * What a location inherits from its `server` (the host's HSTS header, server-snippet, auth-tls verification) is not
 * in the text: a profile means the same only under servers that write the same server-level lines (the shared server
 * of issue 29; hosts with server-level features keep their own server and their rendered locations).
 */
import { createHash } from 'node:crypto';
import type { Location, NginxModel, Server } from '../model/nginx-model.js';
import type { LocationRenderer } from './render.js';

/**
 * PER_REQUEST_FIELDS are the Location fields the router decides or sets per request (dotted paths), each replaced by
 * a placeholder before the profile's text is formatted. Presence is kept: a null stays null, so a location with
 * request metrics or error-backend headers never shares a profile with one without.
 * - `modifier`, `match`, `path`, `pathType`: the match itself (the router's entry `kind` and `path`).
 * - `upstream`, `pass.upstreamName`, `pass.url` (its host; the scheme, the backend protocol, stays), `pass.canary`:
 *   the upstream (`$proxy_upstream_name`) and the canary's, which the router picks.
 * - `route.*`: the route id request metrics label with (`$ia_route`) and its labels.
 * - `info.*`: the namespace, Ingress, Service and port error backends are told (`$namespace` and the others).
 * - `ingress`: the `namespace/name` of the Ingress (not printed; named for completeness).
 * - `externalAuth.location`, `externalAuth.signinLocation`: names derived from the match; a profile names its own.
 * - `waf.ingressPrefix`: the Ingress in ModSecurity's transaction id; a profile reads `$namespace` and `$ingress_name`.
 * Everything else, annotation values included, is part of the profile. Left in on purpose, though derived from the
 * match: `rewrite` (nginx's rewrite takes a literal regex: the location's own pattern), `appRoot` (only `/` has it),
 * `sslRedirect` (the host's TLS), and `errorPages` (their named locations name the error backend's upstream).
 */
export const PER_REQUEST_FIELDS = [
  'modifier',
  'match',
  'path',
  'pathType',
  'upstream',
  'ingress',
  'pass.upstreamName',
  'pass.url',
  'pass.canary',
  'route.id',
  'route.namespace',
  'route.ingressName',
  'route.serviceName',
  'info.namespace',
  'info.ingressName',
  'info.serviceName',
  'info.servicePort',
  'externalAuth.location',
  'externalAuth.signinLocation',
  'waf.ingressPrefix',
] as const;

/** PLACEHOLDER is what each per-request value becomes in a profile's text; none is a valid Kubernetes name. */
export const PLACEHOLDER = {
  match: '/ia-profile:match',
  upstream: 'ia-profile:upstream',
  canary: 'ia-profile:canary',
  ingress: 'ia-profile:namespace/ia-profile:ingress',
  route: 'ia-profile:route',
  namespace: 'ia-profile:namespace',
  ingressName: 'ia-profile:ingress',
  serviceName: 'ia-profile:service',
  servicePort: 'ia-profile:port',
  authLocation: '/_external-auth-ia-profile',
  signinLocation: '@ia_signin_ia-profile',
  wafIngress: '$namespace/$ingress_name/',
} as const;

/** profileLocation is `location` with every per-request field (PER_REQUEST_FIELDS) replaced by its placeholder. */
export function profileLocation(location: Location): Location {
  const p = PLACEHOLDER;
  const { pass, route, info, externalAuth, waf } = location;
  return {
    ...location,
    modifier: '=',
    match: p.match,
    path: p.match,
    pathType: 'Exact',
    upstream: location.upstream === null ? null : p.upstream,
    ingress: location.ingress === null ? null : p.ingress,
    pass: pass && {
      ...pass,
      // the scheme is the backend protocol (http, https, grpc, grpcs): behaviour, not the upstream
      url: `${pass.url.slice(0, pass.url.indexOf('://'))}://${p.upstream}`,
      upstreamName: p.upstream,
      canary: pass.canary === null ? null : p.canary,
    },
    route: route && { id: p.route, namespace: p.namespace, ingressName: p.ingressName, serviceName: p.serviceName },
    info: info && {
      namespace: p.namespace,
      ingressName: p.ingressName,
      serviceName: p.serviceName,
      servicePort: p.servicePort,
    },
    externalAuth: externalAuth && { ...externalAuth, location: p.authLocation, signinLocation: p.signinLocation },
    waf: waf && { ...waf, ingressPrefix: p.wafIngress },
  };
}

/** LocationProfile is a location's profile: the text nginx would hold for it, and the key naming that text. */
export interface LocationProfile {
  /** 32 hex digits of the SHA-256 of `text` */
  readonly key: string;
  /** the `location` block (and its auth-url locations) with placeholders for the per-request values */
  readonly text: string;
}

/** locationProfile formats `location`'s profile with the real partials, against `root`'s settings. */
export function locationProfile(
  location: Location,
  root: NginxModel,
  renderLocation: LocationRenderer,
): LocationProfile {
  const text = renderLocation(profileLocation(location), root);
  return { key: createHash('sha256').update(text).digest('hex').slice(0, 32), text };
}

/** ProfileCensus is how a model's locations fall into profiles. */
export interface ProfileCensus {
  /** every location of the default server and the Ingress servers */
  readonly locations: number;
  /** each distinct profile, by key, with how many locations share it */
  readonly profiles: ReadonlyMap<string, { readonly text: string; readonly locations: number }>;
}

/** profileCensus groups every location of `model` (the default server's, then each server's) by profile. */
export function profileCensus(model: NginxModel, renderLocation: LocationRenderer): ProfileCensus {
  const profiles = new Map<string, { text: string; locations: number }>();
  let locations = 0;
  const servers: readonly Server[] = [model.defaultServer, ...model.servers];
  for (const server of servers) {
    for (const location of server.locations) {
      locations++;
      const { key, text } = locationProfile(location, model, renderLocation);
      const seen = profiles.get(key);
      if (seen) seen.locations++;
      else profiles.set(key, { text, locations: 1 });
    }
  }
  return { locations, profiles };
}
