/**
 * Routes as data (issue 29): the hosts whose Ingresses need nothing at the server level leave nginx.conf. The default
 * server (the one nginx picks for any name no other server has) becomes the shared server: its `location /` asks the
 * Lua router (lua/ingress_actors/ingress_router.lua) for the host's entry, sets the per-request values and jumps to
 * the entry's profile, a named location `@ia_p_<key>` holding the location's directives minus those values
 * (src/render/profile.ts). nginx.conf then grows with the distinct profiles, not with the Ingresses; the routes go to
 * nginx as a table pushed per host (IngressRouteTable).
 *
 * Hosts keep their own server block (src/model/served-from.ts, renderedHosts) when something of theirs lives at the
 * server level, or when nginx would pick another server for their name (a wildcard host or Gateway listener with its
 * own server).
 *
 * Profiles nginx.conf holds outlive their last location (up to a bound), so deleting an Ingress or moving a path to
 * an existing profile is a push, never a reload; a new profile is a reload.
 */
import { ingressHostRoutes } from '../model/ingress-routes.js';
import { changedServers } from '../model/server-diff.js';
import { KeyedDigest } from '../model/incremental/keyed-digest.js';
import { LayeredMapWriter } from '../model/incremental/layered-map.js';
import {
  gatewayCover,
  ownReason,
  type RenderedReason,
  renderedHosts,
  WILDCARD_COVERS,
  wildcardParent,
} from '../model/served-from.js';
import { TABLE_LIMITS } from '../model/table-schema.js';
import { offsetBytes } from '../model/validate.js';
import { fitServerNameHash } from '../model/config-map/hash-sizing.js';
import type {
  ErrorLocation,
  GlobalConfig,
  LimitZone,
  Location,
  NginxModel,
  Server,
  VariableMap,
} from '../model/nginx-model.js';
import type { IngressHostData, IngressRouteEntryData, IngressRouteTable } from '../model/pushed-tables.js';
import { locationProfile, profileLocation } from '../render/profile.js';
import {
  compileLocationRenderer,
  type LocationRenderer,
  partialCalls,
  type TemplateSources,
} from '../render/render.js';

/** PROFILE_PREFIX names a profile's location: `@ia_p_` and its key (lua/ingress_actors/ingress_router.lua jumps there). */
export const PROFILE_PREFIX = '@ia_p_';

/** UNUSED_PROFILES_KEPT bounds the profiles nginx.conf keeps after their last location left, beyond those in use. */
export const UNUSED_PROFILES_KEPT = 256;

/** SharedServing is a model as nginx.conf holds it with routes as data, and the routes it pushes. */
export interface SharedServing {
  /** what is rendered: the hosts that keep their own server, and the default server routing the others */
  readonly model: NginxModel;
  /** null when every host keeps its own server */
  readonly table: IngressRouteTable | null;
  /** every Ingress host (and `_`) and where it is served from: the shared server, or its own (and why) */
  readonly served: ReadonlyMap<string, 'shared' | RenderedReason>;
}

interface Keyed {
  readonly hsts: boolean;
  readonly key: string;
  readonly profile: Location;
}

interface HostMemo {
  readonly json: string;
  readonly profiles: readonly Keyed[];
}

type Where = 'shared' | RenderedReason;

/** HostState is what the syncs so far worked out for one host: its server, where it is served from, its entry. */
interface HostState {
  readonly server: Server;
  /** why the host keeps its own server whatever the others are (server-level settings, a Gateway listener), or null */
  readonly base: RenderedReason | null;
  readonly where: Where;
  /** the host's pushed JSON and profiles, while it is served by the shared server */
  readonly memo: HostMemo | null;
}

/** A count of what the shared hosts use (a profile, an error location), and the one nginx.conf is written with. */
interface Counted<T> {
  count: number;
  readonly value: T;
}

/**
 * SharedServer turns each sync's model into the shared server's model and table. It keeps, from one sync to the
 * next, the profiles nginx.conf holds and, per unchanged location or server object (incremental builds hand them back
 * as the same objects), the profile key and host JSON already worked out. A sync looks only at the servers whose
 * object changed since the last (and, for a wildcard, at the hosts it covers): where each other host is served from,
 * the profiles and error locations in use (counted), the table's hosts and the version's digests of them are carried
 * over, and what nginx.conf is rendered from stays the same objects while nothing of theirs changed (the template
 * keeps a server's text per object; the sync, the whole text per model).
 */
export class SharedServer {
  private renderer: { sources: TemplateSources; render: LocationRenderer; fields: readonly string[] } | null = null;
  private settings = '';
  private keyed = new WeakMap<Location, Keyed>();
  private hosts = new WeakMap<Server, HostMemo>();
  /** the profiles of the last nginx.conf, by key (written sorted by key) */
  private held = new Map<string, Location>();
  /**
   * the http-level definitions the held profiles may name (CORS and affinity maps, limit zones), by name: a profile
   * kept after its last location left still names its Ingress's map or zone, which the model no longer has
   */
  private definitions = new HeldDefinitions();
  /** what the last sync looked at and made */
  private last = new LastShare();

  /**
   * share gives what nginx serves with routes as data, or null when the model has none: without the Lua balancer,
   * without `--routes-as-data`, or when a Gateway listener is the default server of an Ingress port (unknown names
   * are then the Gateway's, so every Ingress host needs a server of its own).
   */
  share(model: NginxModel, sources: TemplateSources, baseConfig?: GlobalConfig): SharedServing | null {
    if (!model.lua?.routesAsData) return null;
    if (model.gatewayDefault.http || model.gatewayDefault.https) {
      this.last = new LastShare();
      return {
        model: { ...model, lua: { ...model.lua, routesAsData: false } },
        table: null,
        served: renderedHosts(model),
      };
    }
    const renderer = this.rendererFor(sources);
    // what the profiles' text and the http-level lines they name (`$ia_hsts`) depend on
    const settings = JSON.stringify([
      model.config.proxyBodySize,
      model.hstsHeader,
      ...renderer.fields.map((f) => (model as unknown as Record<string, unknown>)[f]),
    ]);
    if (settings !== this.settings) {
      // new settings make other profiles (a reload anyway): those kept from before may name what is gone now
      this.settings = settings;
      this.keyed = new WeakMap();
      this.hosts = new WeakMap();
      this.held = new Map();
      this.definitions = new HeldDefinitions();
      this.last = new LastShare();
    }
    // the Gateway listeners' hostnames decide for any host: when they change, every host is looked at again
    const gateway = (model.gateway?.servers ?? []).map((s) => s.host).join(' ');
    if (gateway !== this.last.gateway) this.last = new LastShare(gateway);
    const last = this.last;
    try {
      last.update(model, gatewayCover(model), (server) => this.hostOf(server, model, renderer.render));
    } catch (error) {
      // half an update is no state to go on from: the next sync starts over
      this.last = new LastShare();
      throw error;
    }
    const heldBefore = { map: this.held, size: this.held.size };
    if (this.keep(last.uses)) this.definitions = new HeldDefinitions();
    const heldChanged = this.held !== heldBefore.map || this.held.size !== heldBefore.size;
    return last.serving(model, this.held, heldChanged, this.definitions, baseConfig);
  }

  /**
   * keep adds the profiles in use to those nginx.conf holds; unused ones go only when too many have piled up (then it
   * says true).
   */
  private keep(used: ReadonlyMap<string, Counted<Location>>): boolean {
    let unused = 0;
    for (const key of this.held.keys()) if (!used.has(key)) unused++;
    const pruned = unused > UNUSED_PROFILES_KEPT;
    if (pruned) this.held = new Map([...this.held].filter(([key]) => used.has(key)));
    for (const [key, { value }] of used) if (!this.held.has(key)) this.held.set(key, value);
    return pruned;
  }

  private rendererFor(sources: TemplateSources) {
    if (this.renderer?.sources !== sources) {
      this.renderer = { sources, render: compileLocationRenderer(sources), fields: rootFieldsRead(sources) };
      this.settings = '';
    }
    return this.renderer;
  }

  /** hostOf is a shared host's pushed JSON and the profiles its locations use. */
  private hostOf(server: Server, root: NginxModel, render: LocationRenderer): HostMemo {
    const known = this.hosts.get(server);
    if (known) return known;
    const profiles = server.locations.map((l) => this.profileOf(l, server.hsts, root, render));
    const { entries } = ingressHostRoutes(server);
    const data: IngressHostData = {
      host: server.host,
      entries: entries.map((e): IngressRouteEntryData => {
        const location = server.locations[e.location]!;
        const info = location.info;
        const maxBodySize = bodyLimit(location.client?.maxBodySize ?? root.config.proxyBodySize);
        return {
          kind: e.kind,
          path: e.path,
          profile: profiles[e.location]!.key,
          ...(e.route === null ? {} : { route: e.route }),
          ...(e.upstream === null ? {} : { upstream: e.upstream }),
          ...(info === null ? {} : { info: { ...info } }),
          ...(maxBodySize === null ? {} : { maxBodySize }),
          autoRedirect: e.autoRedirect,
          internal: e.internal,
        };
      }),
    };
    const memo = { json: JSON.stringify(data), profiles };
    this.hosts.set(server, memo);
    return memo;
  }

  /**
   * profileOf is a location's profile under a server with HSTS or without: the server's HSTS lines move into the
   * location (the shared server has none of its own), which is what nginx's inheritance gave it anyway.
   */
  private profileOf(location: Location, serverHsts: boolean, root: NginxModel, render: LocationRenderer): Keyed {
    const hsts = location.hsts || serverHsts;
    const known = this.keyed.get(location);
    if (known && known.hsts === hsts) return known;
    const lifted = hsts === location.hsts ? location : { ...location, hsts };
    const { key } = locationProfile(lifted, root, render);
    const placed = profileLocation(lifted);
    const profile: Location = {
      ...placed,
      named: `${PROFILE_PREFIX}${key}`,
      externalAuth: placed.externalAuth && {
        ...placed.externalAuth,
        location: `/_external-auth-${key}`,
        signinLocation: `@ia_signin_${key}`,
      },
    };
    const keyed = { hsts, key, profile };
    this.keyed.set(location, keyed);
    return keyed;
  }
}

/**
 * LastShare is what the last sync looked at (the model's servers) and made (where each host is served from, the
 * table's hosts and version, the model's parts), kept so the next sync works out only what changed. A new one, with
 * nothing carried over, is the same work with every host new.
 */
class LastShare {
  private servers: readonly Server[] = [];
  private defaultServer: Server | null = null;
  private readonly states = new Map<string, HostState>();
  /** by wildcard host (`*.b.c`): the hosts it would take from the shared server (`a.b.c`), whether it is there or not */
  private readonly covered = new Map<string, Set<string>>();
  /** the profiles the shared hosts' entries name, by key, and how many locations name each */
  readonly uses = new Map<string, Counted<Location>>();
  /** the error locations of the shared hosts, by name (which says the code and upstream), and how many servers have each */
  private readonly errors = new Map<string, Counted<ErrorLocation>>();
  private errorList: readonly ErrorLocation[] | null = null;
  /** the table's version, digested in parts a change makes again */
  private readonly digest = new KeyedDigest();
  /** the table's hosts and where every host is served from, handed out as views later changes leave alone */
  private readonly tableHosts = new LayeredMapWriter<string, string>();
  private readonly served = new LayeredMapWriter<string, Where>();
  private own: readonly Server[] | null = null;
  private table: IngressRouteTable | null = null;
  private defaultOut: Server | null = null;
  /** the model's default server `defaultOut` was made from */
  private defaultFrom: Server | null = null;
  private config: {
    base: GlobalConfig | undefined;
    own: readonly Server[];
    gateway: NginxModel['gateway'];
    config: GlobalConfig;
  } | null = null;
  private definitionsOut: {
    held: HeldDefinitions;
    from: Pick<NginxModel, 'maps' | 'requestZones' | 'connectionZones'>;
    made: Pick<NginxModel, 'maps' | 'requestZones' | 'connectionZones'>;
  } | null = null;
  /** what this sync changed */
  private changed = { own: false, errors: false, table: false };

  constructor(readonly gateway = '') {}

  /** update brings the hosts to `model`'s servers, looking only at those whose object changed since the last. */
  update(model: NginxModel, gatewayNames: (host: string) => RenderedReason | null, memoOf: (s: Server) => HostMemo) {
    this.changed = { own: false, errors: false, table: false };
    const { changed, removed } = serversChanged(this.servers, model.servers, this.states);
    if (model.defaultServer !== this.defaultServer) changed.push(model.defaultServer);
    this.servers = model.servers;
    this.defaultServer = model.defaultServer;
    if (changed.length === 0 && removed.length === 0) return;
    // hosts whose place is to work out again: the changed ones, and those a changed wildcard covers
    const look = new Set<string>();
    for (const host of removed) {
      this.leave(host, this.states.get(host)!);
      this.states.delete(host);
      this.served.delete(host);
      const parent = wildcardParent(host);
      if (parent !== null) this.covered.get(parent)?.delete(host);
      for (const child of this.covered.get(host) ?? []) look.add(child);
    }
    const servers = new Map<string, Server>();
    for (const server of changed) {
      servers.set(server.host, server);
      look.add(server.host);
      for (const child of this.covered.get(server.host) ?? []) look.add(child);
      const parent = wildcardParent(server.host);
      if (parent !== null && !this.states.has(server.host)) {
        let hosts = this.covered.get(parent);
        if (!hosts) this.covered.set(parent, (hosts = new Set()));
        hosts.add(server.host);
      }
    }
    // base first for every changed server: a host's place reads its wildcard's
    const bases = new Map<string, RenderedReason | null>();
    const baseOf = (host: string): RenderedReason | null | undefined => {
      if (bases.has(host)) return bases.get(host);
      const server = servers.get(host);
      if (server) {
        const base = host === '_' ? null : (ownReason(server) ?? gatewayNames(host));
        bases.set(host, base);
        return base;
      }
      return this.states.get(host)?.base;
    };
    for (const host of look) {
      const before = this.states.get(host);
      const server = servers.get(host) ?? before?.server;
      // a host a gone wildcard covered may be gone too
      if (server === undefined) continue;
      const base = baseOf(host) ?? null;
      const parent = wildcardParent(host);
      const parentBase = parent === null ? undefined : baseOf(parent);
      const where: Where = base ?? (parentBase != null ? WILDCARD_COVERS : 'shared');
      if (before && before.server === server && before.where === where) continue;
      if (before) this.leave(host, before);
      const memo = where === 'shared' ? memoOf(server) : null;
      if (memo) this.enter(host, server, memo);
      else this.changed.own = true;
      this.states.set(host, { server, base, where, memo });
      if (before?.where !== where) this.served.set(host, where);
    }
  }

  /**
   * serving is the model nginx.conf is rendered from and the table pushed: each part the same object as the last
   * sync's while nothing it is made from changed.
   */
  serving(
    model: NginxModel,
    held: ReadonlyMap<string, Location>,
    heldChanged: boolean,
    definitions: HeldDefinitions,
    baseConfig: GlobalConfig | undefined,
  ): SharedServing {
    if (this.own === null || this.changed.own)
      this.own = model.servers.filter((s) => this.states.get(s.host)!.where !== 'shared');
    const own = this.own;
    // nginx's server_names hash holds the names of the servers left and the Gateway's: sized to them, so that a host
    // joining the shared server never makes it grow (a reload), and a long Gateway hostname never fails nginx -t
    let config = model.config;
    if (baseConfig) {
      const kept = this.config;
      if (kept === null || kept.base !== baseConfig || kept.own !== own || kept.gateway !== model.gateway) {
        const fitted = fitServerNameHash(baseConfig, [
          ...own.filter((s) => !s.host.startsWith('*.')).map((s) => s.serverName),
          ...(model.gateway?.servers ?? []).filter((s) => hashedGatewayName(s.host)).map((s) => s.serverName),
        ]);
        const same =
          kept !== null &&
          kept.base === baseConfig &&
          kept.config.serverNameHashBucketSize === fitted.serverNameHashBucketSize &&
          kept.config.serverNameHashMaxSize === fitted.serverNameHashMaxSize;
        this.config = { base: baseConfig, own, gateway: model.gateway, config: same ? kept.config : fitted };
      }
      config = this.config!.config;
    }
    if (this.errorList === null || this.changed.errors)
      this.errorList = [...this.errors.values()]
        .map((e) => e.value)
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    if (this.defaultOut === null || heldChanged || this.changed.errors || this.defaultFrom !== model.defaultServer) {
      // by key: the same profiles make the same text, whatever order they came in
      const profiles = [...held].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, profile]) => profile);
      this.defaultOut = { ...model.defaultServer, router: true, locations: profiles, errorLocations: this.errorList };
      this.defaultFrom = model.defaultServer;
    }
    const from = { maps: model.maps, requestZones: model.requestZones, connectionZones: model.connectionZones };
    const made = this.definitionsOut;
    if (
      made === null ||
      made.held !== definitions ||
      made.from.maps !== from.maps ||
      made.from.requestZones !== from.requestZones ||
      made.from.connectionZones !== from.connectionZones
    )
      this.definitionsOut = { held: definitions, from, made: definitions.with(model) };
    if (this.table === null || this.changed.table || heldChanged) {
      this.table = { version: this.version(), hosts: this.tableHosts.view(), profiles: new Set(held.keys()) };
    }
    return {
      model: { ...model, ...this.definitionsOut!.made, config, defaultServer: this.defaultOut, servers: own },
      table: this.table,
      served: this.served.view(),
    };
  }

  /** version digests the table's hosts: the same hosts give the same version, whatever came before. */
  private version(): string {
    return this.digest.version();
  }

  /** enter counts a shared host's profiles and error locations, and puts its entry in the table. */
  private enter(host: string, server: Server, memo: HostMemo): void {
    for (const { key, profile } of memo.profiles) count(this.uses, key, profile, +1);
    for (const e of server.errorLocations) if (count(this.errors, e.name, e, +1)) this.changed.errors = true;
    this.tableHosts.set(host, memo.json);
    this.bucketSet(host, memo.json);
  }

  /** leave takes back what a host's last state counted and put in the table. */
  private leave(host: string, state: HostState): void {
    if (state.memo === null) {
      this.changed.own = true;
      return;
    }
    for (const { key, profile } of state.memo.profiles) count(this.uses, key, profile, -1);
    for (const e of state.server.errorLocations) if (count(this.errors, e.name, e, -1)) this.changed.errors = true;
    this.tableHosts.delete(host);
    this.bucketSet(host, null);
  }

  private bucketSet(host: string, json: string | null): void {
    if (json === null) this.digest.delete(host);
    else this.digest.set(host, json);
    this.changed.table = true;
  }
}

/**
 * HeldDefinitions are the maps and limit zones of every model since the held profiles were last pruned, by name (a
 * map's variable, a zone's name): the model's own first, as it has them, then those only kept profiles still name.
 * Their names come from their content or their Ingress, so one name is one definition; the model's wins.
 */
class HeldDefinitions {
  private readonly maps = new Map<string, VariableMap>();
  private readonly requestZones = new Map<string, LimitZone>();
  private readonly connectionZones = new Map<string, LimitZone>();
  /** the last model's lists and what they gave: the builds hand the same lists back while they are unchanged */
  private last: { readonly from: readonly unknown[]; readonly merged: ReturnType<HeldDefinitions['with']> } | null =
    null;

  with(model: NginxModel): Pick<NginxModel, 'maps' | 'requestZones' | 'connectionZones'> {
    const from = [model.maps, model.requestZones, model.connectionZones];
    const last = this.last;
    if (last !== null && from.every((list, i) => list === last.from[i])) return last.merged;
    const zoneName = (z: LimitZone) => z.zone.slice(0, z.zone.lastIndexOf(':'));
    const merged = {
      maps: merge(this.maps, model.maps, (m) => m.variable),
      requestZones: merge(this.requestZones, model.requestZones, zoneName),
      connectionZones: merge(this.connectionZones, model.connectionZones, zoneName),
    };
    this.last = { from, merged };
    return merged;
  }
}

/** merge records `current` in `held` by name and gives `current`, then what `held` has of earlier models only. */
function merge<T>(held: Map<string, T>, current: readonly T[], name: (t: T) => string): T[] {
  const now = new Set<string>();
  for (const t of current) {
    held.set(name(t), t);
    now.add(name(t));
  }
  return [...current, ...[...held].filter(([n]) => !now.has(n)).map(([, t]) => t)];
}

/** bodyLimit is a client_max_body_size value in bytes for the router, null for none (`0`). */
function bodyLimit(size: string): number | null {
  const bytes = offsetBytes(size);
  if (bytes === 0n) return null;
  return bytes > BigInt(TABLE_LIMITS.bodySize) ? TABLE_LIMITS.bodySize : Number(bytes);
}

/**
 * rootFieldsRead are the model's root fields the location partials read through `@root`: a profile's text depends on
 * them, so a change of any drops the profile keys worked out before. Read from the template, so a partial that reads
 * another field cannot be overlooked.
 */
export function rootFieldsRead(sources: TemplateSources): string[] {
  const fields = new Set<string>();
  const seen = new Set<string>();
  const visit = (name: string) => {
    const source = sources.partials[name];
    if (source === undefined || seen.has(name)) return;
    seen.add(name);
    for (const m of source.matchAll(/@root\.(\w+)/g)) fields.add(m[1]!);
    for (const called of partialCalls(source)) visit(called);
  };
  visit('location');
  visit('external-auth');
  return [...fields].sort();
}

/** count counts `value` in or out under `key`; true when the key came or went. */
function count<T>(counts: Map<string, Counted<T>>, key: string, value: T, by: 1 | -1): boolean {
  const counted = counts.get(key);
  if (by > 0) {
    if (counted) counted.count++;
    else counts.set(key, { count: 1, value });
    return counted === undefined;
  }
  if (counted === undefined || --counted.count > 0) return false;
  counts.delete(key);
  return true;
}

/**
 * serversChanged is, of the last sync's servers and this one's, the servers new or replaced and the hosts gone (each
 * host is once in each list).
 */
function serversChanged(
  before: readonly Server[],
  after: readonly Server[],
  states: ReadonlyMap<string, HostState>,
): { changed: Server[]; removed: string[] } {
  const { added, removed } = changedServers(before, after);
  const hosts = new Set(added.map((s) => s.host));
  return {
    changed: added.filter((s) => states.get(s.host)?.server !== s),
    removed: removed.filter((s) => !hosts.has(s.host)).map((s) => s.host),
  };
}

/** hashedGatewayName: a Gateway server's name goes into the server_names hash unless a wildcard or the catch-all */
const hashedGatewayName = (host: string) => host !== '_' && host !== '' && !host.startsWith('*.');
