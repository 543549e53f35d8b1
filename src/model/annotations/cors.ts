import { checkHostPort, show, type Checked } from '../validate.js';
import { intIn, read, readBool, readList } from './read.js';
import type { AnnotationGroup } from './types.js';

const DEFAULT_METHODS = 'GET, PUT, POST, DELETE, PATCH, OPTIONS';
const DEFAULT_HEADERS =
  'DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,Cache-Control,Content-Type,Range,Authorization';

/** entry builds a checker for one entry of a CORS list. */
function entry(pattern: RegExp, what: string): (value: string) => Checked<string> {
  return (value) =>
    pattern.test(value) ? { ok: true, value } : { ok: false, message: `${show(value)} is not ${what}` };
}

/** ORIGIN splits an origin into its scheme with `://`, a `*.` wildcard and the host[:port]. */
export const ORIGIN = /^([a-z][a-z0-9+.-]{0,31}:\/\/)(\*\.)?([^/]+)$/;

/**
 * checkOrigin accepts `*` or `scheme://host[:port]`, a host being a name, an IP or `*.name` (one
 * label, as ingress-nginx), lower-cased. Any scheme, as ingress-nginx (apps send `tauri://localhost`,
 * `capacitor://localhost`), spelled as RFC 3986 spells one.
 */
export function checkOrigin(value: string): Checked<string> {
  const origin = value.toLowerCase();
  if (origin === '*') return { ok: true, value: origin };
  const match = ORIGIN.exec(origin);
  if (!match || !checkHostPort(match[3]).ok)
    return { ok: false, message: `${show(value)} is not * or scheme://host[:port]` };
  return { ok: true, value: origin };
}

/** origins gives the allowed origins, sorted and without repeats, or null for any origin (`*` among them). */
export function origins(list: readonly string[]): string[] | null {
  return list.includes('*') ? null : [...new Set(list)].sort();
}

/** joined is a header value of the valid entries, or undefined (the default) when none is left. */
const joined = (items: readonly string[] | undefined) => (items?.length ? items.join(', ') : undefined);

/** corsGroup is enable-cors and the cors-* annotations, with ingress-nginx's defaults. */
export const corsGroup: AnnotationGroup<'cors'> = {
  name: 'CorsConfig',
  field: 'cors',
  keys: [
    {
      key: 'enable-cors',
      risk: 'Low',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'partial',
      doc: 'answer CORS: Access-Control-* headers, and 204 to preflight OPTIONS',
      note:
        'Allow-Methods, -Headers, -Credentials and Max-Age are sent on every response, not only to listed ' +
        'origins (Allow-Origin is)',
    },
    {
      key: 'cors-allow-origin',
      risk: 'Medium',
      scope: 'ingress',
      onInvalid: 'filter',
      support: 'supported',
      doc: '`*` (default) or scheme://host[:port] list (any scheme, as ingress-nginx), `*.host` for one label',
    },
    {
      key: 'cors-allow-methods',
      risk: 'Medium',
      scope: 'ingress',
      onInvalid: 'filter',
      support: 'supported',
      doc: `default \`${DEFAULT_METHODS}\``,
    },
    {
      key: 'cors-allow-headers',
      risk: 'Medium',
      scope: 'ingress',
      onInvalid: 'filter',
      support: 'supported',
      doc:
        'default DNT, Keep-Alive, User-Agent, X-Requested-With, If-Modified-Since, Cache-Control, Content-Type, ' +
        'Range, Authorization',
    },
    {
      key: 'cors-expose-headers',
      risk: 'Medium',
      scope: 'ingress',
      onInvalid: 'filter',
      support: 'supported',
      doc: 'Access-Control-Expose-Headers (none by default)',
    },
    {
      key: 'cors-allow-credentials',
      risk: 'Low',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'Access-Control-Allow-Credentials (true by default)',
    },
    {
      key: 'cors-max-age',
      risk: 'Low',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'preflight cache time, seconds (1728000 by default)',
    },
  ],
  parse(input) {
    // As ingress-nginx, a bad origin is skipped and the others kept; with none left, no origin is allowed.
    const allowed = readList(input, 'cors-allow-origin', 16384, checkOrigin);
    const settings = {
      methods:
        joined(readList(input, 'cors-allow-methods', 4096, entry(/^[A-Za-z]{1,32}$/, 'a method'))) ?? DEFAULT_METHODS,
      headers:
        joined(readList(input, 'cors-allow-headers', 4096, entry(/^[A-Za-z0-9_-]{1,64}$/, 'a header name'))) ??
        DEFAULT_HEADERS,
      exposeHeaders:
        joined(
          readList(input, 'cors-expose-headers', 4096, entry(/^([A-Za-z0-9_-]{1,64}|\*)$/, 'a header name or *')),
        ) ?? null,
      credentials: readBool(input, 'cors-allow-credentials') ?? true,
      maxAge: read(input, 'cors-max-age', intIn(0, 2 ** 31 - 1)) ?? 1728000,
    };
    if (readBool(input, 'enable-cors') !== true) return null;
    return { origins: allowed === undefined ? null : origins(allowed), settings };
  },
};
