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
import { createHash } from 'node:crypto';
import { ingressHostRoutes } from '../model/ingress-routes.js';
import { type RenderedReason, renderedHosts } from '../model/served-from.js';
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

/**
 * SharedServer turns each sync's model into the shared server's model and table. It keeps, from one sync to the
 * next, the profiles nginx.conf holds and, per unchanged location or server object (incremental builds hand them back
 * as the same objects), the profile key and host JSON already worked out.
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

  /**
   * share gives what nginx serves with routes as data, or null when the model has none: without the Lua balancer,
   * without `--routes-as-data`, or when a Gateway listener is the default server of an Ingress port (unknown names
   * are then the Gateway's, so every Ingress host needs a server of its own).
   */
  share(model: NginxModel, sources: TemplateSources, baseConfig?: GlobalConfig): SharedServing | null {
    if (!model.lua?.routesAsData) return null;
    if (model.gatewayDefault.http || model.gatewayDefault.https)
      return {
        model: { ...model, lua: { ...model.lua, routesAsData: false } },
        table: null,
        served: renderedHosts(model),
      };
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
    }
    const served = renderedHosts(model);
    const shared: Server[] = [model.defaultServer];
    const own: Server[] = [];
    for (const server of model.servers) {
      if (served.get(server.host) === 'shared') shared.push(server);
      else own.push(server);
    }
    const hosts = new Map<string, string>();
    const used = new Map<string, Location>();
    const errors = new Map<string, ErrorLocation>();
    for (const server of shared) {
      const memo = this.hostOf(server, model, renderer.render);
      hosts.set(server.host, memo.json);
      for (const p of memo.profiles) used.set(p.key, p.profile);
      for (const e of server.errorLocations) errors.set(e.name, e);
    }
    if (this.keep(used)) this.definitions = new HeldDefinitions();
    const definitions = this.definitions.with(model);
    // by key: the same profiles make the same text, whatever order they came in
    const profiles = [...this.held].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, profile]) => profile);
    const defaultServer: Server = {
      ...model.defaultServer,
      router: true,
      locations: profiles,
      errorLocations: [...errors.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    };
    const version = createHash('sha256');
    for (const host of [...hosts.keys()].sort())
      version.update(host).update('\n').update(hosts.get(host)!).update('\n');
    // nginx's server_names hash holds the names of the servers left: sized to them, so that a host joining the
    // shared server never makes it grow (a reload)
    const config = baseConfig
      ? fitServerNameHash(
          baseConfig,
          own.filter((s) => !s.host.startsWith('*.')).map((s) => s.serverName),
        )
      : model.config;
    return {
      model: { ...model, ...definitions, config, defaultServer, servers: own },
      table: { version: version.digest('hex').slice(0, 32), hosts, profiles: new Set(this.held.keys()) },
      served,
    };
  }

  /**
   * keep adds the profiles in use to those nginx.conf holds; unused ones go only when too many have piled up (then it
   * says true).
   */
  private keep(used: ReadonlyMap<string, Location>): boolean {
    let unused = 0;
    for (const key of this.held.keys()) if (!used.has(key)) unused++;
    const pruned = unused > UNUSED_PROFILES_KEPT;
    if (pruned) this.held = new Map([...this.held].filter(([key]) => used.has(key)));
    for (const [key, profile] of used) if (!this.held.has(key)) this.held.set(key, profile);
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
 * HeldDefinitions are the maps and limit zones of every model since the held profiles were last pruned, by name (a
 * map's variable, a zone's name): the model's own first, as it has them, then those only kept profiles still name.
 * Their names come from their content or their Ingress, so one name is one definition; the model's wins.
 */
class HeldDefinitions {
  private readonly maps = new Map<string, VariableMap>();
  private readonly requestZones = new Map<string, LimitZone>();
  private readonly connectionZones = new Map<string, LimitZone>();

  with(model: NginxModel): Pick<NginxModel, 'maps' | 'requestZones' | 'connectionZones'> {
    const zoneName = (z: LimitZone) => z.zone.slice(0, z.zone.lastIndexOf(':'));
    return {
      maps: merge(this.maps, model.maps, (m) => m.variable),
      requestZones: merge(this.requestZones, model.requestZones, zoneName),
      connectionZones: merge(this.connectionZones, model.connectionZones, zoneName),
    };
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
