/**
 * Hostname intersection between a listener and a route, by the Gateway API's rules: `*.` is a
 * suffix match of at least one label; of two overlapping names the narrower is the effective one.
 */

/** wildcardCovers says whether the wildcard `*.suffix` covers `host` (itself a name or a narrower wildcard). */
function wildcardCovers(wildcard: string, host: string): boolean {
  const suffix = wildcard.slice(1); // ".example.com"
  if (host.startsWith('*.')) return host.slice(1).endsWith(suffix);
  return host.length > suffix.length && host.endsWith(suffix);
}

/** intersectOne is the narrower of two hostnames when one covers the other, else undefined. */
export function intersectOne(listener: string, route: string): string | undefined {
  if (listener === route) return route;
  if (listener.startsWith('*.') && wildcardCovers(listener, route)) return route;
  if (route.startsWith('*.') && wildcardCovers(route, listener)) return listener;
  return undefined;
}

/**
 * intersectHostnames is the set of hostnames a route serves on a listener: `[null]` means any
 * host (neither side names one), `[]` means no intersection (the route does not attach there).
 */
export function intersectHostnames(listener: string | undefined, route: readonly string[]): (string | null)[] {
  if (listener === undefined) return route.length === 0 ? [null] : [...new Set(route)];
  if (route.length === 0) return [listener];
  const out = new Set<string>();
  for (const host of route) {
    const common = intersectOne(listener, host);
    if (common !== undefined) out.add(common);
  }
  return [...out];
}

/**
 * compareHostnames orders effective hostnames most specific first, as the spec gives precedence:
 * non-wildcard before wildcard, then more characters, then alphabetical; null (any host) last.
 */
export function compareHostnames(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  const wa = a.startsWith('*.');
  const wb = b.startsWith('*.');
  if (wa !== wb) return wa ? 1 : -1;
  if (a.length !== b.length) return b.length - a.length;
  return a < b ? -1 : 1;
}

/** covers says whether a request for any name `host` (null: any host) stands for is also matched by `by`. */
function covers(by: string | null, host: string | null): boolean {
  if (by === null || by === host) return true;
  if (host === null) return false;
  return by.startsWith('*.') && wildcardCovers(by, host);
}

/**
 * coveringHostnames lists the hostnames of `all` that match every request `host` matches (itself
 * included), most specific first: the spec gives precedence to rules of routes with the more
 * specific hostname and, past those, lets the less specific ones match (a route without hostnames
 * still answers a path that the host's own routes do not).
 */
export function coveringHostnames(host: string | null, all: readonly (string | null)[]): (string | null)[] {
  return all.filter((by) => covers(by, host)).sort(compareHostnames);
}
