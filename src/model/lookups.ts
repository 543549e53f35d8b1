/**
 * Lookups index one snapshot's Services, EndpointSlices and Secrets; TrackedReads records which
 * of them one Ingress's plan read, so the plan can be reused by the next build while every one
 * of those objects is still the same (the caches replace an object on change, never mutate it).
 */
import { listChange } from './incremental/list-diff.js';
import type { EndpointSlice, KubeObject, Secret, Service, Snapshot } from './snapshot.js';

/** The label that ties an EndpointSlice to its Service. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

const NO_SLICES: readonly EndpointSlice[] = Object.freeze([]);

/** Lookups are one snapshot's objects by `namespace/name` (EndpointSlices by their Service). */
export class Lookups {
  readonly services: ReadonlyMap<string, Service>;
  readonly slices: ReadonlyMap<string, EndpointSlice[]>;
  readonly secrets: ReadonlyMap<string, Secret>;
  /**
   * the first of the builds' Lookups that hold these same objects (this one, or one before it): what was checked
   * against that one holds here without a look
   */
  readonly sameObjectsAs: Lookups;

  /** With the previous build's Lookups, a kind whose list is the same array keeps its index. */
  constructor(
    private readonly snapshot: Snapshot,
    previous?: Lookups,
  ) {
    const same = (kind: 'services' | 'endpointSlices' | 'secrets') =>
      previous !== undefined && previous.snapshot[kind] === snapshot[kind];
    this.services = same('services') ? previous!.services : byName(snapshot.services);
    this.secrets = same('secrets') ? previous!.secrets : byName(snapshot.secrets);
    this.slices = same('endpointSlices') ? previous!.slices : byService(snapshot.endpointSlices);
    const unchanged =
      previous !== undefined &&
      this.services === previous.services &&
      this.secrets === previous.secrets &&
      this.slices === previous.slices;
    this.sameObjectsAs = unchanged ? previous.sameObjectsAs : this;
  }

  /**
   * changedSecrets names (namespace/name) the Secrets that are not the ones `other` holds: added, removed or replaced.
   * `keys` are changedKeys' answer, when it gave one (else every Secret is compared).
   */
  changedSecrets(other: Lookups, keys: readonly string[] | null): Set<string> {
    if (this.secrets === other.secrets) return new Set();
    if (keys !== null) return new Set(keys.filter((k) => k.startsWith(SECRET)).map((k) => k.slice(SECRET.length)));
    const changed = new Set<string>();
    for (const [key, secret] of this.secrets) if (other.secrets.get(key) !== secret) changed.add(key);
    for (const key of other.secrets.keys()) if (!this.secrets.has(key)) changed.add(key);
    return changed;
  }

  /**
   * changedKeys names, as TrackedReads.keys does, the objects whose answers may differ from `other`'s: the Services and
   * Secrets replaced, added or removed, the Services whose EndpointSlices did. Null when more than `limit` objects
   * changed (a relist, a restart): the caller looks at everything then. A walk of the changed part of each list only.
   */
  changedKeys(other: Lookups, limit: number): string[] | null {
    const keys: string[] = [];
    const kinds = [
      ['services', SERVICE, nameOf],
      ['secrets', SECRET, nameOf],
      ['endpointSlices', SLICES, ownerOf],
    ] as const;
    for (const [kind, prefix, keyOf] of kinds) {
      const before: readonly KubeObject[] = other.snapshot[kind];
      const after: readonly KubeObject[] = this.snapshot[kind];
      if (before === after) continue;
      const { gone, came } = listChange(before, after);
      if (keys.length + gone.length + came.length > limit) return null;
      // an object in both only moved (its answers are the same)
      const moved = new Set(gone.filter((o) => came.includes(o)));
      for (const o of gone) if (!moved.has(o)) keys.push(prefix + keyOf(o));
      for (const o of came) if (!moved.has(o)) keys.push(prefix + keyOf(o));
    }
    return keys;
  }
}

/** the prefixes of TrackedReads.keys and Lookups.changedKeys, one per kind of object read */
const SERVICE = 'service ';
const SECRET = 'secret ';
const SLICES = 'slices ';

const nameOf = (o: KubeObject) => `${o.metadata?.namespace}/${o.metadata?.name}`;
const ownerOf = (o: KubeObject) => `${o.metadata?.namespace}/${o.metadata?.labels?.[SERVICE_NAME_LABEL]}`;

function byName<T extends Service | Secret>(objects: readonly T[]): Map<string, T> {
  const map = new Map<string, T>();
  for (const o of objects) map.set(`${o.metadata?.namespace}/${o.metadata?.name}`, o);
  return map;
}

function byService(slices: readonly EndpointSlice[]): Map<string, EndpointSlice[]> {
  const map = new Map<string, EndpointSlice[]>();
  for (const slice of slices) {
    const owner = slice.metadata?.labels?.[SERVICE_NAME_LABEL];
    if (!owner) continue;
    const key = `${slice.metadata?.namespace}/${owner}`;
    const list = map.get(key);
    if (list) list.push(slice);
    else map.set(key, [slice]);
  }
  return map;
}

/** Reads is what resolving backends and annotations may look up. */
export interface Reads {
  service(key: string): Service | undefined;
  slices(key: string): readonly EndpointSlice[];
  secret(key: string): Secret | undefined;
}

/** TrackedReads answers from one snapshot's Lookups and remembers every answer it gave. */
export class TrackedReads implements Reads {
  // Flat lists, not maps: a plan reads a handful of objects, and there are thousands of plans.
  private readonly services: (string | Service | undefined)[] = [];
  private readonly slicesRead: (string | readonly EndpointSlice[])[] = [];
  private readonly secrets: (string | Secret | undefined)[] = [];

  constructor(private readonly from: Lookups) {}

  service(key: string): Service | undefined {
    const s = this.from.services.get(key);
    this.services.push(key, s);
    return s;
  }

  slices(key: string): readonly EndpointSlice[] {
    const list = this.from.slices.get(key) ?? NO_SLICES;
    this.slicesRead.push(key, list);
    return list;
  }

  secret(key: string): Secret | undefined {
    const s = this.from.secrets.get(key);
    this.secrets.push(key, s);
    return s;
  }

  /** keys name every object this reader asked for, found or not, as Lookups.changedKeys names them. */
  *keys(): Iterable<string> {
    for (let i = 0; i < this.services.length; i += 2) yield SERVICE + (this.services[i] as string);
    for (let i = 0; i < this.secrets.length; i += 2) yield SECRET + (this.secrets[i] as string);
    for (let i = 0; i < this.slicesRead.length; i += 2) yield SLICES + (this.slicesRead[i] as string);
  }

  /** secretKeys are the Secrets (namespace/name) this reader asked for, found or not. */
  *secretKeys(): Iterable<string> {
    for (let i = 0; i < this.secrets.length; i += 2) yield this.secrets[i] as string;
  }

  /** readAnySecretOf says whether this reader asked for one of `keys` (namespace/name). */
  readAnySecretOf(keys: ReadonlySet<string>): boolean {
    if (keys.size === 0) return false;
    for (let i = 0; i < this.secrets.length; i += 2) if (keys.has(this.secrets[i] as string)) return true;
    return false;
  }

  /** unchangedIn says whether `now` would give every answer this reader gave, object for object. */
  unchangedIn(now: Lookups): boolean {
    const { services, slicesRead, secrets } = this;
    for (let i = 0; i < services.length; i += 2)
      if (now.services.get(services[i] as string) !== services[i + 1]) return false;
    for (let i = 0; i < secrets.length; i += 2)
      if (now.secrets.get(secrets[i] as string) !== secrets[i + 1]) return false;
    for (let i = 0; i < slicesRead.length; i += 2) {
      if (
        !sameItems(now.slices.get(slicesRead[i] as string) ?? NO_SLICES, slicesRead[i + 1] as readonly EndpointSlice[])
      )
        return false;
    }
    return true;
  }
}

/** sameItems compares two lists object for object. */
export function sameItems<T>(a: readonly T[], b: readonly T[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
