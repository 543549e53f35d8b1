/**
 * Pure helpers over the tables the controller pushes to nginx's Lua balancer over the control socket (so that an
 * endpoint change or a renewed certificate needs no reload): versions, the routes table, what a certificate table
 * serves, and the union a reload pushes. Their shapes are src/model/pushed-tables.ts; the sync splits them off the
 * model (src/sync/dynamic-split.ts); the nginx actor pushes them (src/nginx/control.ts); lua/ingress_actors/ reads
 * them. Every string in them passed the model's validators; Lua checks their shape again and treats them as data
 * only.
 */
import { createHash } from 'node:crypto';
import { changedKeys } from './incremental/layered-map.js';
import type {
  BackendTable,
  CertificateTable,
  DynamicTables,
  IngressRouteTable,
  RouteServer,
  RouteTable,
} from './pushed-tables.js';

/**
 * servedNames are what a certificate table serves: every host, then every Gateway server as `server <key>` (a host and
 * a server key are two separate namespaces).
 */
export function servedNames(table: CertificateTable): string[] {
  return [
    ...table.certificates.flatMap((c) => c.hosts),
    ...table.certificates.flatMap((c) => c.servers.map((key) => `server ${key}`)),
  ];
}

/** An empty RouteTable, pushed when no Gateway route is served. */
export const EMPTY_ROUTES: RouteTable = Object.freeze({ version: 'empty', servers: [] });

/** routeTableOf gives the servers their version. */
export function routeTableOf(servers: readonly RouteServer[]): RouteTable {
  return servers.length === 0 ? EMPTY_ROUTES : { version: versionOf(servers), servers };
}

/** versionOf is a table's version: a digest of its content, which nginx reports back. */
export function versionOf(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 32);
}

/** mostMirrors is how many `mirror` slots routes need: the most RequestMirror filters one of them has. */
export function mostMirrors(routes: readonly { readonly filters: readonly { readonly type: string }[] }[]): number {
  return routes.reduce((n, r) => Math.max(n, r.filters.filter((f) => f.type === 'RequestMirror').length), 0);
}

/**
 * tablesForReload are the tables pushed just before a reload is signalled: the new ones, plus the entries only
 * the old ones had, so that old workers (still serving the old config) and new workers both find theirs.
 * The version differs from the new tables', so the exact ones follow once the reload is confirmed.
 * A Gateway server whose routes need more mirror slots than the running nginx.conf gave it keeps its old routes
 * until then: its new ones take effect with the reload that brings their mirrors, not before without them.
 */
export function tablesForReload(next: DynamicTables, previous: DynamicTables | null): DynamicTables {
  if (previous === null) return next;
  const names = new Set(next.backends.backends.map((b) => b.name));
  const keys = new Set(next.routes.servers.map((s) => s.key));
  const before = new Map((previous.routes?.servers ?? []).map((s) => [s.key, s]));
  let held = false;
  const kept = next.routes.servers.map((s) => {
    const old = before.get(s.key);
    if (old === undefined || mostMirrors(s.routes) <= mostMirrors(old.routes)) return s;
    held = true;
    return old;
  });
  const servers = [...kept, ...(previous.routes?.servers ?? []).filter((s) => !keys.has(s.key))];
  // an old Secret's entry stays for the old workers, with what no new entry serves (each host and key once)
  const secrets = new Set(next.certificates.certificates.map((c) => c.secret));
  const taken = new Set(servedNames(next.certificates));
  const backends = [...next.backends.backends, ...previous.backends.backends.filter((b) => !names.has(b.name))];
  const certificates = [
    ...next.certificates.certificates,
    ...previous.certificates.certificates
      .filter((c) => !secrets.has(c.secret))
      .map((c) => ({
        ...c,
        hosts: c.hosts.filter((h) => !taken.has(h)),
        servers: c.servers.filter((k) => !taken.has(`server ${k}`)),
      }))
      .filter((c) => c.hosts.length > 0 || c.servers.length > 0),
  ];
  const ingress = next.ingress && ingressForReload(next.ingress, previous.ingress);
  return {
    ...(ingress ? { ingress } : {}),
    backends:
      backends.length === next.backends.backends.length
        ? next.backends
        : { version: `u-${next.backends.version}`, backends },
    certificates:
      certificates.length === next.certificates.certificates.length
        ? next.certificates
        : { version: `u-${next.certificates.version}`, certificates },
    routes:
      servers.length === next.routes.servers.length && !held
        ? next.routes
        : { version: `u-${next.routes.version}`, servers },
  };
}

/** profilesOf are the profiles a host's pushed JSON names (IngressRouteEntryData.profile). */
function profilesOf(json: string): string[] {
  return [...json.matchAll(/"profile":"([0-9a-f]{32})"/g)].map((m) => m[1]!);
}

/**
 * ingressForReload is the Ingress route table pushed just before a reload: the new hosts, and the hosts gone kept for
 * the old workers. (What the running nginx.conf cannot serve yet, a host naming a new profile, the push holds back
 * itself: servableIngress.)
 */
function ingressForReload(next: IngressRouteTable, previous: IngressRouteTable | undefined): IngressRouteTable {
  if (previous?.hosts === undefined) return next;
  let hosts: Map<string, string> | null = null;
  for (const [host, json] of previous.hosts) if (!next.hosts.has(host)) (hosts ??= new Map(next.hosts)).set(host, json);
  return hosts ? { version: `u-${next.version}`, hosts, profiles: next.profiles } : next;
}

/** servedProfiles are the profiles an nginx.conf has: its `location @ia_p_<key>` blocks (routes as data). */
export function servedProfiles(config: string): Set<string> {
  return new Set([...config.matchAll(/location @ia_p_([0-9a-f]{32}) \{/g)].map((m) => m[1]!));
}

/**
 * servableIngress is the Ingress route table nginx can serve with the config it runs, whose profiles are `serving`:
 * a host whose changed entries name a profile that config lacks keeps what nginx holds for it (`held`), or stays
 * out if new, until a reload brings the profile. Never an entry jumping to a location nginx does not have: a
 * refused reload (a ConfigMap nginx -t rejects, say) leaves nginx on its last good config, and the routes stay those
 * of that config. The version stays `next`'s (what the controller asked for); the hosts are what nginx holds, so the
 * next delta sends the held-back hosts again.
 */
export function servableIngress(
  next: IngressRouteTable,
  held: IngressRouteTable | null,
  serving: ReadonlySet<string>,
): IngressRouteTable {
  let hosts: Map<string, string> | null = null;
  // only the hosts that may differ from what nginx holds (all of them when that cannot be told cheaply)
  const look = held?.hosts ? changedKeys(next.hosts, held.hosts) : null;
  const candidates: Iterable<[string, string]> =
    look === null
      ? next.hosts
      : [...look].flatMap((host) => (next.hosts.has(host) ? [[host, next.hosts.get(host)!]] : []));
  for (const [host, json] of candidates) {
    const old = held?.hosts?.get(host);
    if (json === old || profilesOf(json).every((p) => serving.has(p))) continue;
    hosts ??= new Map(next.hosts);
    if (old === undefined) hosts.delete(host);
    else hosts.set(host, old);
  }
  return hosts ? { ...next, hosts } : next;
}

/**
 * KeyedEntries is a table stored entry by entry in nginx (lua/ingress_actors/keyed.lua) as a push sees it: its version
 * and each entry's JSON by key.
 */
export interface KeyedEntries {
  readonly version: string;
  readonly entries: ReadonlyMap<string, string>;
}

/**
 * keyedBody is a keyed table's push body (`POST /backends`, `/certificates`, `/ingress-routes`): the entries whose
 * JSON differs from `held`'s (what nginx holds) and the keys `held` has that `next` does not, applied on `held`'s
 * version (`base`); everything, as a full replace (`base` null), when nginx holds none (a new master) or an unknown
 * version. Entries' JSON is joined as made, not serialised again.
 */
export function keyedBody(next: KeyedEntries, held: KeyedEntries | null): string {
  const delta = held !== null && !held.version.startsWith('unknown:');
  const set: string[] = [];
  const remove: string[] = [];
  // a delta looks only at the keys that may differ, when the tables can tell them (views on one base)
  const look = delta ? changedKeys(next.entries, held.entries) : null;
  if (look !== null) {
    for (const key of look) {
      const json = next.entries.get(key);
      if (json === undefined) {
        if (held!.entries.has(key)) remove.push(key);
      } else if (held!.entries.get(key) !== json) set.push(json);
    }
  } else {
    for (const [key, json] of next.entries) if (!delta || held.entries.get(key) !== json) set.push(json);
    if (delta) for (const key of held.entries.keys()) if (!next.entries.has(key)) remove.push(key);
  }
  const base = delta ? JSON.stringify(held.version) : 'null';
  return `{"version":${JSON.stringify(next.version)},"base":${base},"set":[${set.join(',')}],"remove":${JSON.stringify(remove)}}`;
}

/**
 * an entry's JSON, made once per entry object (table entries are never changed once made): the table nginx holds was
 * the next one of an earlier push
 */
const jsonByEntry = new WeakMap<object, string>();

/** entryJson is a table entry's JSON, made once per entry object. */
export function entryJson(entry: object): string {
  let json = jsonByEntry.get(entry);
  if (json === undefined) {
    json = JSON.stringify(entry);
    jsonByEntry.set(entry, json);
  }
  return json;
}

/** an entry's digest, made once per entry object */
const entryDigest = new WeakMap<object, string>();

/**
 * entriesVersion is the version of a table of `entries`: a digest of their digests, each made once per entry object,
 * so a table made again from mostly the same objects costs what changed (10,000 backends, 1,000 certificates' PEM).
 */
export function entriesVersion(entries: readonly object[]): string {
  const hash = createHash('sha256');
  for (const entry of entries) {
    let digest = entryDigest.get(entry);
    if (digest === undefined) {
      digest = createHash('sha256').update(entryJson(entry)).digest('hex');
      entryDigest.set(entry, digest);
    }
    hash.update(digest);
  }
  return hash.digest('hex').slice(0, 32);
}

/** a keyed table's entries by key, each one's JSON made once per object (entryJson) */
const keyedOf = new WeakMap<object, KeyedEntries>();

function keyed<T extends object>(table: { readonly version: string }, list: readonly T[], key: (e: T) => string) {
  let entries = keyedOf.get(table);
  if (entries === undefined) {
    entries = { version: table.version, entries: new Map(list.map((e) => [key(e), entryJson(e)])) };
    keyedOf.set(table, entries);
  }
  return entries;
}

/**
 * keyedEntriesOf records a table's entries by key as its maker kept them (a view later changes leave alone), so that
 * a push reads them instead of making them from the list, and a delta looks only at what changed (changedKeys).
 */
export function keyedEntriesOf(table: { readonly version: string }, entries: ReadonlyMap<string, string>): void {
  keyedOf.set(table, { version: table.version, entries });
}

/** backendEntries is a BackendTable as nginx stores it: each Backend by name. */
export function backendEntries(table: BackendTable): KeyedEntries {
  return keyed(table, table.backends, (b) => b.name);
}

/** certificateEntries is a CertificateTable as nginx stores it: each Secret's entry by `namespace/name`. */
export function certificateEntries(table: CertificateTable): KeyedEntries {
  return keyed(table, table.certificates, (c) => c.secret);
}

/** ingressEntries is an IngressRouteTable as nginx stores it: each host's JSON (made once, by the table's maker). */
export function ingressEntries(table: IngressRouteTable): KeyedEntries {
  return { version: table.version, entries: table.hosts };
}
