/**
 * The one definition of the pushed tables' bounds and shapes (src/model/pushed-tables.ts), for both sides: the
 * model checks every entry against it before pushing (an entry over a bound is left out with a problem on its
 * object), and lua/ingress_actors/schema.lua, generated from it (`luaSchema`, kept equal by
 * test/unit/table-schema.test.ts), is what validate.lua checks the same entries against. So the two cannot drift:
 * whatever the controller sends, nginx accepts, unless nginx itself cannot use it (a key its OpenSSL cannot read).
 */
import { HTTP_METHODS } from './gateway/types.js';

/** A namespace or name: a DNS label (63) for a namespace, a DNS subdomain (253) for most names. */
const NAMESPACE = 63;
const NAME = 253;
/** rules per HTTPRoute or GRPCRoute (the CRDs' maxItems is 16: two digits) */
const RULE_INDEX = 2;

/**
 * TABLE_LIMITS are the bounds of every string and number in a table entry: lengths in bytes, numbers inclusive.
 * Where a legal Kubernetes object makes a longer string, the bound is what the CRD or API server allows.
 */
export const TABLE_LIMITS = {
  /** a table's version (a digest, `u-` before it for a reload's union) */
  version: 128,
  /** a Backend's name: `<namespace>_<service>_<port>` and the like */
  backendName: 255,
  /** a chash key: nginx variables and literals */
  hashKey: 255,
  /** a host name, or `*.` and one */
  host: NAME,
  /** a Gateway server's key: `[<address>:]<port>/<hostname>` */
  serverKey: 310,
  /** a route entry's label `<namespace>/<name>#<rule>`: as long as legal names make it */
  routeLabel: NAMESPACE + 1 + NAME + 1 + RULE_INDEX,
  /**
   * a path or a path regex: an HTTPRoute's path is at most 1,024; a GRPCRoute's method match joins a service and a
   * method of at most 1,024 each, with at most 16 characters of syntax around them (`/(?:…)/(?:…)`)
   */
  path: 1024 + 1024 + 16,
  /** a header or query parameter name */
  headerName: 256,
  /** a header or query parameter value, or a value a filter sets */
  value: 4096,
  /** a backendRef's weight */
  weight: 1_000_000,
  /** a route timeout, in milliseconds */
  timeoutMs: 400_000_000,
  /** RequestMirror filters of one route: nginx.conf has this many mirror slots per Gateway location */
  mirrors: 2,
  /** a CORS filter's origins, each at most `corsOrigin` characters (the CRD's maxItems and MaxLength) */
  corsOrigins: 64,
  corsOrigin: NAME,
  /** a CORS filter's allowMethods (HTTP methods or `*`) and its allowHeaders and exposeHeaders */
  corsMethods: 9,
  corsHeaders: 64,
  /** a CORS filter's maxAge in seconds */
  corsMaxAge: 2 ** 31 - 1,
  /** the HTTPS listener hostnames of one socket a Gateway server's `tls` names (a Gateway has at most 64 listeners) */
  tlsListeners: 1024,
  /** a certificate entry's key: a Secret's `<namespace>/<name>` (`#<n>` after it, should one Secret make two files) */
  secret: NAMESPACE + 1 + NAME + 5,
  /**
   * a certificate chain's or a key's PEM: a Secret holds at most 1 MiB (the API server's limit), so this is what
   * one Secret can add to the certificate table, once, whatever number of hosts name it
   */
  pem: 1024 * 1024,
  /** an Ingress route entry's route id (RouteLabels.id, a hash in hex: 16 today, room for a whole SHA-256) */
  routeId: 64,
  /** an Ingress route entry's location profile key (`@ia_p_<profile>`): exactly this many lowercase hex digits */
  profile: 32,
  /** an Ingress route entry's body size limit in bytes: larger limits are sent as this (no Content-Length reaches it) */
  bodySize: Number.MAX_SAFE_INTEGER,
  /** the entries of one Ingress host (its locations and auth-url locations) */
  ingressEntries: 10_000,
  /** the hosts one Ingress route push may set, and the hosts it may remove */
  ingressHosts: 200_000,
  /** the backends or certificates one push may set, and those it may remove */
  tableEntries: 200_000,
} as const;

/** TABLE_SHAPES are the closed sets an entry's fields are taken from. */
export const TABLE_SHAPES = {
  balance: ['round_robin', 'ewma', 'chash', 'sticky'],
  pathTypes: ['Exact', 'PathPrefix', 'RegularExpression'],
  valueTypes: ['Exact', 'RegularExpression'],
  modifierTypes: ['ReplaceFullPath', 'ReplacePrefixMatch'],
  methods: HTTP_METHODS,
  corsMethods: [...HTTP_METHODS, '*'],
  redirectCodes: [301, 302, 303, 307, 308],
  /** how an Ingress route entry matches $uri (IngressMatchKind): nginx's `=`, none, `~` and `~*` */
  ingressKinds: ['exact', 'prefix', 'regex', 'iregex'],
} as const;

/** luaSchema is lua/ingress_actors/schema.lua: the same limits, and each shape as a set. */
export function luaSchema(): string {
  const limits = Object.entries(TABLE_LIMITS).map(([k, v]) => `    ${k} = ${v},`);
  const key = (v: string | number) => (typeof v === 'number' ? `[${v}]` : /^[A-Za-z_]\w*$/.test(v) ? v : `["${v}"]`);
  const shapes = Object.entries(TABLE_SHAPES).map(
    ([k, values]) =>
      `  ${k} = { ${(values as readonly (string | number)[]).map((v) => `${key(v)} = true`).join(', ')} },`,
  );
  return [
    '-- Generated from src/model/table-schema.ts (test/unit/table-schema.test.ts keeps it equal: UPDATE_SCHEMA=1 to',
    '-- write it); do not edit. The bounds and closed sets of the pushed tables, the same on both sides.',
    'return {',
    '  limits = {',
    ...limits,
    '  },',
    ...shapes,
    '}',
    '',
  ].join('\n');
}
