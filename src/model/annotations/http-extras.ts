/**
 * HttpExtras collects what annotations need at the http level: limit zones, maps (CORS
 * origins, cookie affinity), canary selectors and htpasswd files. Names are derived from the
 * content (a stable hash), so the same snapshot always gives the same names in any order.
 */
import type { Canary, Certificate, Cors, LimitZone, MapEntry, VariableMap } from '../nginx-model.js';
import { compare } from '../backends.js';
import { Tally } from '../tally.js';
import type { AffinityAnnotations, CanaryAnnotations, IngressAnnotations, RateLimitAnnotations } from './types.js';
import { ORIGIN } from './cors.js';

/** stableId is a short FNV-1a hash of a string, for names that must not depend on input order. */
export function stableId(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

/** literal escapes a map key so nginx takes it as text, never as a regex or a keyword (`default`, `include`). */
export const literal = (key: string): string => `\\${key}`;

const regexEscape = (text: string) => text.replace(/[.*+?^${}()|[\]\\/-]/g, (c) => `\\${c}`);

/** HttpExtras is the http-level state one buildModel run gathers. */
/** COOKIE_SECURE is `; Secure` over HTTPS, empty over HTTP: the affinity cookie's Secure unless the annotation sets it. */
const COOKIE_SECURE = '$ia_cookie_secure';

/** COOKIE_EXPIRES is the variable a location with session-cookie-expires sets (with Lua) to the cookie's date. */
export const COOKIE_EXPIRES = '$ia_cookie_expires';

/**
 * AFFINITY_KEY_PREFIX starts the variable a cookie affinity upstream hashes on (no upstream-hash-by can name it:
 * checkHashKey takes only nginx's own variables), so the Lua balancer's table can tell affinity from hashing:
 * `$ia_aff_<name>`, or `$ia_affd_<cookieId>` for a name nginx cannot put in a variable's name.
 */
export const AFFINITY_KEY_PREFIX = '$ia_aff';

/** PLAIN_COOKIE is a cookie name nginx can read as `$cookie_<name>` (letters, digits and `_`). */
const PLAIN_COOKIE = /^[A-Za-z0-9_]+$/;

/**
 * cookieId turns a cookie name into a part of a variable name: each character other than a letter or digit
 * becomes `_` and its two hex digits, so distinct names give distinct ids (`hello-cookie`: `hello_2dcookie`).
 */
export const cookieId = (name: string): string =>
  name.replace(/[^A-Za-z0-9]/g, (c) => `_${c.charCodeAt(0).toString(16).padStart(2, '0')}`);

export class HttpExtras {
  private readonly requestZones = new Map<string, LimitZone>();
  private readonly connectionZones = new Map<string, LimitZone>();
  private readonly mapsByVariable = new Map<string, VariableMap>();
  private readonly files = new Map<string, Certificate>();
  private readonly canaryList = new Map<string, Canary>();

  /** limits gives the limit_req / limit_conn settings of an Ingress (`owner` is ns/name), one zone each. */
  limits(owner: string, limit: RateLimitAnnotations | null) {
    if (!limit) return { limitRequests: null, limitConnections: null };
    const base = owner.replace('/', '_');
    let limitRequests = null;
    const perSecond = limit.rps !== null;
    const rate = limit.rps ?? limit.rpm;
    if (rate !== null) {
      const zone = `${base}_${perSecond ? 'rps' : 'rpm'}`;
      this.requestZones.set(zone, { zone: `${zone}:5m`, rate: `${rate}r/${perSecond ? 's' : 'm'}` });
      limitRequests = { zone, burst: rate * limit.burstMultiplier };
    }
    let limitConnections = null;
    if (limit.connections !== null) {
      const zone = `${base}_conn`;
      this.connectionZones.set(zone, { zone: `${zone}:5m`, rate: null });
      limitConnections = { zone, count: limit.connections };
    }
    return { limitRequests, limitConnections };
  }

  /** cors turns the CORS annotations into a location's Cors; a list of origins becomes a map on $http_origin. */
  cors(cors: IngressAnnotations['cors']): Cors | null {
    if (!cors) return null;
    if (cors.origins === null) return { ...cors.settings, origin: '*', anyOrigin: true, preflight: null };
    const variable = `$ia_cors_${stableId(cors.origins.join(','))}`;
    const entries: MapEntry[] = cors.origins.map((origin) => {
      const [, scheme, wildcard, host] = ORIGIN.exec(origin)!;
      return {
        key: `~*^${regexEscape(scheme!)}${wildcard ? '[^./]+\\.' : ''}${regexEscape(host!)}$`,
        value: '$http_origin',
      };
    });
    this.addMap({ source: '$http_origin', variable, fallback: '', entries });
    const preflight = `${variable}_preflight`;
    this.addMap({
      source: `$request_method:${variable}`,
      variable: preflight,
      fallback: '',
      entries: [{ key: '~^OPTIONS:.', value: '1' }],
    });
    return { ...cors.settings, origin: variable, anyOrigin: false, preflight };
  }

  /**
   * affinity gives the upstream hash key and the Set-Cookie variable for cookie affinity on a
   * location at `path`: the key is the cookie, or a fresh $request_id when it is missing, and
   * the Set-Cookie value is empty (no header) once the client has the cookie.
   */
  affinity(
    affinity: AffinityAnnotations,
    path: string,
    lua: boolean,
  ): { hashKey: string; setCookie: string; cookieExpires: number | null } {
    const name = affinity.cookieName;
    const { key, fresh } = this.affinityKey(name);
    // With Lua the location computes the Expires date per request; without, nginx cannot: Max-Age stands in (and
    // for an Expires of now, which the template's `if` would not see).
    const cookieExpires = lua && affinity.expires ? affinity.expires : null;
    const maxAge = cookieExpires === null ? (affinity.maxAge ?? affinity.expires) : affinity.maxAge;
    const attributes = [
      `${name}=${fresh}`,
      `Path=${affinity.path ?? path}`,
      ...(cookieExpires !== null ? [`Expires=${COOKIE_EXPIRES}`] : []),
      ...(maxAge !== null ? [`Max-Age=${maxAge}`] : []),
      ...(affinity.domain !== null ? [`Domain=${affinity.domain}`] : []),
      ...(affinity.sameSite !== null ? [`SameSite=${affinity.sameSite}`] : []),
      // As ingress-nginx's sticky cookie: Secure when the annotation says so, else when the request came over HTTPS.
      affinity.secure ? 'Secure' : `HttpOnly${COOKIE_SECURE}`,
      ...(affinity.secure ? ['HttpOnly'] : []),
    ].join('; ');
    if (!affinity.secure)
      this.addMap({
        source: '$https',
        variable: COOKIE_SECURE,
        fallback: '',
        entries: [{ key: 'on', value: '; Secure' }],
      });
    const setCookie = `$ia_setcookie_${stableId(attributes)}`;
    this.addMap({ source: fresh, variable: setCookie, fallback: attributes, entries: [{ key: '', value: '' }] });
    return { hashKey: key, setCookie, cookieExpires };
  }

  /**
   * cookie gives the variable holding the value of cookie `name`: `$cookie_<name>` when nginx can name it so,
   * else a map on $http_cookie (`$ia_ck_<cookieId>`) that finds it as nginx's $cookie_ does: the first `name=`
   * (the name in any case) at the start or after `;` or `,`, spaces around `=` skipped, the value up to `;`.
   */
  cookie(name: string): string {
    if (PLAIN_COOKIE.test(name)) return `$cookie_${name}`;
    const variable = `$ia_ck_${cookieId(name)}`;
    this.addMap({
      source: '$http_cookie',
      variable,
      fallback: '',
      entries: [{ key: `~*(?:^|[;,]) *${regexEscape(name)} *= *([^;]*)`, value: '$1' }],
    });
    return variable;
  }

  /**
   * affinityKey registers the maps behind cookie `name`'s hash key (`$ia_aff_<name>`, or `$ia_affd_<cookieId>`
   * for a name with other characters) and its fresh value.
   */
  affinityKey(name: string): { key: string; fresh: string } {
    const key = PLAIN_COOKIE.test(name)
      ? `${AFFINITY_KEY_PREFIX}_${name}`
      : `${AFFINITY_KEY_PREFIX}d_${cookieId(name)}`;
    const fresh = `${key}_new`;
    const cookie = this.cookie(name);
    this.addMap({
      source: cookie,
      variable: key,
      fallback: cookie,
      entries: [{ key: '', value: '$request_id' }],
    });
    this.addMap({
      source: cookie,
      variable: fresh,
      fallback: '',
      entries: [{ key: '', value: '$request_id' }],
    });
    return { key, fresh };
  }

  /** authFile registers an htpasswd file (written 0600 by the caller) and returns its path. */
  authFile(secretId: string, content: string): string {
    const file = `auth/${secretId.replace('/', '_')}.htpasswd`;
    this.files.set(file, { id: secretId, file, pem: content });
    return file;
  }

  /** caFile registers the CA bundle of an auth-tls Secret (written 0600 by the caller) and returns its path. */
  caFile(secretId: string, pem: string): string {
    const file = `certificates/ca_${secretId.replace('/', '_')}.pem`;
    this.files.set(file, { id: `${secretId} ca.crt`, file, pem });
    return file;
  }

  /** clientCertificateFile registers proxy-ssl-secret's certificate and key (written 0600) and returns its path. */
  clientCertificateFile(secretId: string, pem: string): string {
    const file = `certificates/proxy_ssl_${secretId.replace('/', '_')}.pem`;
    this.files.set(file, { id: `${secretId} tls.crt`, file, pem });
    return file;
  }

  /**
   * canary registers the selector of one route (`route` names host and path) and returns the
   * variable holding the upstream to use: header, then cookie, then weight decide, each giving
   * `1` (canary), `0` (main) or nothing (next rule); the first decision in the concatenation wins.
   * The caller makes sure there is at least one rule.
   */
  canary(route: string, main: string, canaryUpstream: string, rules: CanaryAnnotations): string {
    const id = stableId(route);
    const variable = `$ia_canary_${id}`;
    const maps: VariableMap[] = [];
    const decide = (source: string, suffix: string, entries: MapEntry[]) => {
      maps.push({ source, variable: `${variable}_${suffix}`, fallback: '', entries });
      return `${variable}_${suffix}`;
    };
    const votes: string[] = [];
    const alwaysNever: MapEntry[] = [
      { key: literal('always'), value: '1' },
      { key: literal('never'), value: '0' },
    ];
    if (rules.header) {
      votes.push(
        decide(
          rules.header.variable,
          'h',
          rules.header.value === null ? alwaysNever : [{ key: literal(rules.header.value), value: '1' }],
        ),
      );
    }
    if (rules.cookie) votes.push(decide(this.cookie(rules.cookie), 'c', alwaysNever));
    let split: Canary['split'] = null;
    if (rules.weight !== null) {
      const percent = Math.round(rules.weight * 10000) / 100;
      const entries: MapEntry[] =
        percent <= 0
          ? [{ key: '*', value: '0' }]
          : percent >= 100
            ? [{ key: '*', value: '1' }]
            : [
                { key: `${percent}%`, value: '1' },
                { key: '*', value: '0' },
              ];
      split = { variable: `${variable}_w`, entries };
      votes.push(split.variable);
    }
    const select: VariableMap = {
      source: votes.join(''),
      variable,
      fallback: main,
      entries: [{ key: '~^1', value: canaryUpstream }],
    };
    this.canaryList.set(variable, { maps, split, select });
    return variable;
  }

  /** sections are the collection's five keyed parts, for a tally of many collections. */
  sections(): readonly [
    ReadonlyMap<string, LimitZone>,
    ReadonlyMap<string, LimitZone>,
    ReadonlyMap<string, VariableMap>,
    ReadonlyMap<string, Certificate>,
    ReadonlyMap<string, Canary>,
  ] {
    return [this.requestZones, this.connectionZones, this.mapsByVariable, this.files, this.canaryList];
  }

  /** empty says the collection holds nothing, so a tally can pass it by. */
  get empty(): boolean {
    return (
      this.requestZones.size +
        this.connectionZones.size +
        this.mapsByVariable.size +
        this.files.size +
        this.canaryList.size ===
      0
    );
  }

  private addMap(map: VariableMap): void {
    this.mapsByVariable.set(map.variable, map);
  }
}

/**
 * HttpExtrasTally is the union of many HttpExtras (one per Ingress plan, one per host with
 * canaries), each added once and taken back when its plan or host is rebuilt; the same name
 * means the same content.
 */
export class HttpExtrasTally {
  private readonly requestZones = new Tally<string, LimitZone>();
  private readonly connectionZones = new Tally<string, LimitZone>();
  private readonly maps = new Tally<string, VariableMap>();
  private readonly files = new Tally<string, Certificate>();
  private readonly canaries = new Tally<string, Canary>();
  private readonly parts = [this.requestZones, this.connectionZones, this.maps, this.files, this.canaries] as const;

  add(extras: HttpExtras): void {
    if (extras.empty) return;
    for (const [i, section] of extras.sections().entries()) (this.parts[i] as Tally<string, unknown>).addAll(section);
  }

  remove(extras: HttpExtras): void {
    if (extras.empty) return;
    for (const [i, section] of extras.sections().entries())
      (this.parts[i] as Tally<string, unknown>).removeAll(section);
  }

  /** model gives the collected zones, maps, canaries and files, sorted: the same lists while a section is unchanged. */
  model() {
    const byZone = (a: LimitZone, b: LimitZone) => compare(a.zone, b.zone);
    return {
      requestZones: this.sorted(0, () => [...this.requestZones.values()].sort(byZone)),
      connectionZones: this.sorted(1, () => [...this.connectionZones.values()].sort(byZone)),
      maps: this.sorted(2, () => [...this.maps.values()].sort((a, b) => compare(a.variable, b.variable))),
      files: this.sorted(3, () => [...this.files.values()].sort((a, b) => compare(a.file, b.file))),
      canaries: this.sorted(4, () =>
        [...this.canaries.keys()].sort(compare).map((variable) => this.canaries.get(variable)!),
      ),
    };
  }

  /** each section's sorted list and the tally version it was made at */
  private readonly lists: ({ version: number; list: readonly unknown[] } | undefined)[] = [];

  private sorted<T>(section: number, make: () => T[]): readonly T[] {
    const version = this.parts[section]!.version;
    const known = this.lists[section];
    if (known?.version === version) return known.list as readonly T[];
    const list = make();
    this.lists[section] = { version, list };
    return list;
  }
}
