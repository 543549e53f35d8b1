/**
 * The model's side of the pushed tables' checks: the same bounds and character sets as lua/ingress_actors/validate.lua
 * (both from src/model/table-schema.ts), so an entry the model keeps is one nginx accepts. Each check says why an
 * entry is not pushable, or null.
 */
import type { Backend, RouteEntry, RouteFilterEntry, RouteValueMatch } from './pushed-tables.js';
import { TABLE_LIMITS as L, TABLE_SHAPES as S } from './table-schema.js';

// Lua's %c: ASCII control characters
const CONTROL = /[\x00-\x1f\x7f]/;
const TOKEN = /^[A-Za-z0-9!#%&'*+.^_`|~-]+$/;
const HOST = /^(?:\*\.)?[A-Za-z0-9.-]+$/;
const NAME = /^[A-Za-z0-9_.-]+$/;
const HASH_KEY = /^[A-Za-z0-9_.:/$-]+$/;
const SERVER_KEY = /^(?:[0-9A-Fa-f.:]+:)?[0-9]+\/[A-Za-z0-9.*_-]+$/;
const SECRET = /^[a-z0-9.-]+\/[a-z0-9.-]+(?:#[0-9]{1,4})?$/;

const text = (v: string, max: number, emptyOk = false) =>
  v.length <= max && (emptyOk || v.length >= 1) && !CONTROL.test(v);
const among = (set: readonly (string | number)[], v: unknown) => set.includes(v as string | number);
const intIn = (v: number, lo: number, hi: number) => Number.isInteger(v) && v >= lo && v <= hi;
const tooLong = (what: string, max: number) => `${what} is longer than ${max} characters, more than nginx takes`;

/** backendNameProblem: a Backend's (or a route's backendRef's) name. */
export function backendNameProblem(name: string): string | null {
  return name.length <= L.backendName && NAME.test(name)
    ? null
    : `backend name is not 1..${L.backendName} of [A-Za-z0-9_.-]`;
}

/** backendProblem checks a Backend but its endpoints (addresses come from EndpointSlices the model checked). */
export function backendProblem(b: Backend): string | null {
  const name = backendNameProblem(b.name);
  if (name) return name;
  if (!among(S.balance, b.balance)) return `balance ${b.balance} is not one of ${S.balance.join(', ')}`;
  if (
    b.hashKey !== null &&
    (b.hashKey.length > L.hashKey || !HASH_KEY.test(b.hashKey) || /\$(?![A-Za-z0-9_])/.test(b.hashKey))
  )
    return `the hash key is not 1..${L.hashKey} of $variables and [A-Za-z0-9_.:/-]`;
  return null;
}

/** hostProblem: a TLS host, lowercase, or `*.` and one. */
export function hostProblem(host: string): string | null {
  if (host.length > L.host) return tooLong('the host', L.host);
  return host === host.toLowerCase() && HOST.test(host) ? null : `${host} is not a lowercase host or *.host`;
}

/** serverKeyProblem: a Gateway server's key, `[<address>:]<port>/<hostname>`. */
export function serverKeyProblem(key: string): string | null {
  if (key.length > L.serverKey) return tooLong('the server key', L.serverKey);
  return SERVER_KEY.test(key) ? null : 'the server key is not [<address>:]<port>/<host>';
}

/** tlsListenersProblem: a Gateway server's `tls` (listener hostnames: '' for none, a host or `*.` and one). */
export function tlsListenersProblem(tls: { listener: string; listeners: readonly string[] }): string | null {
  if (tls.listeners.length > L.tlsListeners) return `more than ${L.tlsListeners} HTTPS listeners on one socket`;
  for (const h of [tls.listener, ...tls.listeners])
    if (h !== '' && hostProblem(h) !== null) return `listener hostname ${h} is not a lowercase host or *.host`;
  return null;
}

/** certificateProblem: a certificate entry's key, the Secret's `<namespace>/<name>`, and its PEM sizes. */
export function certificateProblem(secret: string, cert: string, key: string): string | null {
  if (secret.length > L.secret || !SECRET.test(secret)) return `the Secret's name is not 1..${L.secret} of a name`;
  if (cert.length > L.pem || key.length > L.pem) return `the certificate or key is over ${L.pem} bytes of PEM`;
  return null;
}

function pathProblem(path: RouteEntry['path']): string | null {
  if (!among(S.pathTypes, path.type)) return `path type ${path.type} is not supported`;
  if (path.value.length > L.path) return tooLong('the path', L.path);
  if (!text(path.value, L.path)) return 'the path has control characters';
  return path.type === 'RegularExpression' || path.value.startsWith('/') ? null : 'the path is not absolute';
}

function valuesProblem(list: readonly RouteValueMatch[], what: string): string | null {
  for (const m of list) {
    if (!among(S.valueTypes, m.type)) return `${what} match type ${m.type} is not supported`;
    if (m.name.length > L.headerName || !TOKEN.test(m.name)) return `${what} name is not 1..${L.headerName} of a token`;
    if (!text(m.value, L.value, m.type === 'Exact'))
      return `${what} ${m.name}: the value is not 0..${L.value} plain characters`;
  }
  return null;
}

function pairsProblem(list: readonly { name: string; value: string }[]): string | null {
  for (const p of list) {
    if (p.name.length > L.headerName || !TOKEN.test(p.name)) return `header name is not 1..${L.headerName} of a token`;
    if (!text(p.value, L.value, true)) return `header ${p.name}: the value is not 0..${L.value} plain characters`;
  }
  return null;
}

function hostnameProblem(h: string | undefined): string | null {
  return h === undefined || (h.length >= 1 && h.length <= L.host && /^[A-Za-z0-9.-]+$/.test(h))
    ? null
    : `the hostname is not 1..${L.host} of [A-Za-z0-9.-]`;
}

function modifierProblem(p: { type: string; value: string } | undefined): string | null {
  if (p === undefined) return null;
  if (!among(S.modifierTypes, p.type)) return `path modifier ${p.type} is not supported`;
  return text(p.value, L.path) && p.value.startsWith('/') ? null : `the path is not an absolute path of 1..${L.path}`;
}

function filterProblem(f: RouteFilterEntry): string | null {
  switch (f.type) {
    case 'RequestHeaderModifier':
    case 'ResponseHeaderModifier':
      return (
        pairsProblem(f.set) ??
        pairsProblem(f.add) ??
        (f.remove.every((n) => n.length <= L.headerName && TOKEN.test(n)) ? null : 'a removed header is not a token')
      );
    case 'RequestRedirect':
      if (f.port !== undefined && !intIn(f.port, 1, 65535)) return 'the redirect port is not 1..65535';
      if (!among(S.redirectCodes, f.statusCode)) return `status ${f.statusCode} is not a redirect`;
      return hostnameProblem(f.hostname) ?? modifierProblem(f.path);
    case 'URLRewrite':
      return hostnameProblem(f.hostname) ?? modifierProblem(f.path);
    case 'RequestMirror':
      return f.backend === undefined ? null : backendNameProblem(f.backend);
    case 'CORS':
      return corsProblem(f);
  }
}

/** the same pattern as validate.lua's cors_origin: `*` or scheme://host[:port], lower case */
const CORS_ORIGIN = /^https?:\/\/(?:\*|(?:\*\.)?[a-z0-9.-]+)(?::[0-9]{1,5})?$/;

function corsProblem(f: Extract<RouteFilterEntry, { type: 'CORS' }>): string | null {
  const list = (v: readonly string[], max: number, ok: (x: string) => boolean) =>
    v.length <= max && v.every(ok) && (!v.includes('*') || v.length === 1);
  if (!list(f.allowOrigins, L.corsOrigins, (o) => o === '*' || (o.length <= L.corsOrigin && CORS_ORIGIN.test(o))))
    return `allowOrigins are not 0..${L.corsOrigins} of * or http(s)://host[:port]`;
  if (!list(f.allowMethods, L.corsMethods, (m) => among(S.corsMethods, m)))
    return `allowMethods are not 0..${L.corsMethods} HTTP methods or *`;
  const header = (h: string) => h === '*' || (h.length <= L.headerName && TOKEN.test(h));
  if (!list(f.allowHeaders, L.corsHeaders, header) || !list(f.exposeHeaders, L.corsHeaders, header))
    return `allowHeaders or exposeHeaders are not 0..${L.corsHeaders} tokens or *`;
  if (!intIn(f.maxAge, 1, L.corsMaxAge)) return `maxAge is not 1..${L.corsMaxAge}`;
  return null;
}

/** routeEntryProblem checks one route entry as validate.lua's `route` does. */
export function routeEntryProblem(r: RouteEntry): string | null {
  if (!text(r.route, L.routeLabel)) return tooLong('the route label <namespace>/<name>#<rule>', L.routeLabel);
  const path = pathProblem(r.path);
  if (path) return path;
  if (r.method !== undefined && !among(S.methods, r.method)) return `method ${r.method} is not an HTTP method`;
  const values = valuesProblem(r.headers, 'header') ?? valuesProblem(r.queryParams, 'query parameter');
  if (values) return values;
  for (const f of r.filters) {
    const why = filterProblem(f);
    if (why) return `${f.type}: ${why}`;
  }
  if (r.filters.filter((f) => f.type === 'RequestMirror').length > L.mirrors)
    return `more than ${L.mirrors} RequestMirror filters`;
  for (const b of r.backends) {
    if (b.backend !== undefined && backendNameProblem(b.backend)) return backendNameProblem(b.backend);
    for (const f of b.filters ?? []) {
      const why = f.type === 'RequestHeaderModifier' ? filterProblem(f) : 'only RequestHeaderModifier on a backend';
      if (why) return `a backend's ${f.type}: ${why}`;
    }
    if (!intIn(b.weight, 0, L.weight)) return `a weight is not 0..${L.weight}`;
    if ((b.tls === undefined) !== (b.sni === undefined)) return 'a backend has tls without sni or sni without tls';
    if (b.tls !== undefined && !/^[0-9a-f]{16}$/.test(b.tls)) return 'a backend TLS profile is not 16 hex digits';
    if (b.sni !== undefined && (b.sni.startsWith('*') || hostProblem(b.sni))) return 'a backend TLS name is not a host';
  }
  for (const t of [r.timeouts.request, r.timeouts.backendRequest])
    if (t !== undefined && !intIn(t, 0, L.timeoutMs)) return `a timeout is not 0..${L.timeoutMs} ms`;
  return null;
}
