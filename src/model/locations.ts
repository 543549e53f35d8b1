import type { Location, PathType } from './nginx-model.js';
import { compare } from './backends.js';

/** Route is one Ingress path on one host, after validation, before it becomes nginx locations. */
export interface Route {
  readonly path: string;
  readonly pathType: PathType;
  readonly upstream: string | null;
  readonly status: 404 | 503 | null;
  readonly ingress: string | null;
}

/**
 * normalisePath gives the path an Ingress rule means: a Prefix's trailing `/` is not part of it
 * (Ingress v1: `/foo/` and `/foo` match the same requests); an Exact path is taken as written.
 */
export function normalisePath(path: string, pathType: PathType): string {
  if (pathType === 'Exact' || path === '/') return path;
  return path.replace(/\/+$/, '') || '/';
}

/**
 * toLocations turns a host's routes into nginx locations with Ingress v1 matching: a Prefix
 * `/foo` is element-wise, so it becomes `location = /foo` and `location /foo/` (never the bare
 * `/foo`, which nginx would let match `/foobar`); an Exact path wins over a Prefix's exact half.
 * Sorted Exact first, then longest first, so the file reads in the order the rules apply.
 */
export function toLocations(routes: readonly Route[], sslRedirect: boolean): Location[] {
  const exact = new Set(routes.filter((r) => r.pathType === 'Exact').map((r) => r.path));
  const locations: Location[] = [];
  const add = (route: Route, modifier: '=' | '', match: string) =>
    locations.push({
      modifier,
      match,
      path: route.path,
      pathType: route.pathType,
      upstream: route.upstream,
      status: route.status,
      sslRedirect,
      ingress: route.ingress,
    });
  for (const route of routes) {
    if (route.pathType === 'Exact') add(route, '=', route.path);
    else if (route.path === '/') add(route, '', '/');
    else {
      if (!exact.has(route.path)) add(route, '=', route.path);
      add(route, '', `${route.path}/`);
    }
  }
  return locations.sort(
    (a, b) =>
      (a.modifier === '=' ? 0 : 1) - (b.modifier === '=' ? 0 : 1) ||
      b.match.length - a.match.length ||
      compare(a.match, b.match),
  );
}
