/**
 * The Ingress route table: each host's locations (toLocations' output, in nginx.conf's order) as the
 * data lua/ingress_actors/ingress_router.lua picks a path from per request, instead of nginx's own
 * `location` lookup. Not pushed yet: issue 29 ("routes are data") sends these per host and hands the
 * picked entry to its location profile. Pure: a model in, plain data out.
 */
import type { Location, NginxModel, Server } from './nginx-model.js';

/**
 * IngressMatchKind is how an entry matches the request's normalised URI ($uri), as nginx's modifiers do:
 * `exact` (`location =`), `prefix` (plain `location`, always `/` or ending in `/`), `regex` (`~`) and
 * `iregex` (`~*`, case-insensitive).
 */
export type IngressMatchKind = 'exact' | 'prefix' | 'regex' | 'iregex';

/** IngressRouteEntry is one location of a host as the router reads it. */
export interface IngressRouteEntry {
  readonly kind: IngressMatchKind;
  /** the location's match: the exact path, the prefix, or the PCRE pattern */
  readonly path: string;
  /** the location's index in its server's locations (issue 29: the profile it jumps to) */
  readonly location: number;
  /** the route id request metrics are labelled with (RouteLabels.id), or null */
  readonly route: string | null;
  /** the upstream the location proxies to ($proxy_upstream_name), or null (a redirect, an error status) */
  readonly upstream: string | null;
  /**
   * nginx answers a request for `path` without its trailing `/` with a 301 to `path` (proxy_pass's auto_redirect on
   * an exact or prefix location whose name ends in `/`), unless an exact location is that request's URI
   */
  readonly autoRedirect: boolean;
  /**
   * the entry is the `internal` location an auth-url subrequest goes to (`path`, of the location at `location`): a
   * client's request for it answers 404
   */
  readonly internal: boolean;
}

/**
 * IngressHostRoutes is one host's entries, in its server's location order: the order nginx tries its
 * regex locations in. `host` is the Ingress host: a name, `*.` and a domain (one label), or `_` (the default).
 */
export interface IngressHostRoutes {
  readonly host: string;
  readonly entries: readonly IngressRouteEntry[];
}

const KIND: Readonly<Record<Location['modifier'], IngressMatchKind>> = {
  '=': 'exact',
  '': 'prefix',
  '~': 'regex',
  '~*': 'iregex',
};

/**
 * ingressHostRoutes turns a server's locations into its route entries. A prefix that is neither `/` nor ends in `/`
 * is an error: toLocations renders Prefix paths element-wise (`= /foo` and `/foo/`), and the router relies on it to
 * find the longest prefix by looking up the URI's `/`-ended prefixes instead of trying every entry.
 */
export function ingressHostRoutes(server: Server): IngressHostRoutes {
  const entries = server.locations.map((l, location): IngressRouteEntry => {
    if (l.modifier === '' && !l.match.endsWith('/'))
      throw new Error(`host ${server.host}: prefix location ${JSON.stringify(l.match)} does not end in "/"`);
    return {
      kind: KIND[l.modifier],
      path: l.match,
      location,
      route: l.route?.id ?? null,
      upstream: l.pass?.upstreamName ?? null,
      // the template writes proxy_pass or grpc_pass exactly when the location has a `pass`
      autoRedirect:
        l.pass !== null && (l.modifier === '=' || l.modifier === '') && l.match.length > 1 && l.match.endsWith('/'),
      internal: false,
    };
  });
  // server.hbs writes each auth-url location (`location = /_external-auth-…`, internal) after its location
  server.locations.forEach((l, location) => {
    if (l.externalAuth)
      entries.push({
        kind: 'exact',
        path: l.externalAuth.location,
        location,
        route: null,
        upstream: null,
        autoRedirect: false,
        internal: true,
      });
  });
  return { host: server.host, entries };
}

/** ingressRouteTable is every Ingress server's entries: the default server's (host `_`) first, then the named ones. */
export function ingressRouteTable(model: Pick<NginxModel, 'defaultServer' | 'servers'>): IngressHostRoutes[] {
  return [model.defaultServer, ...model.servers].map(ingressHostRoutes);
}
