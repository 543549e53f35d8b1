import { checkHostPort, show, type Checked } from '../validate.js';
import { intIn, read, readBool } from './read.js';
import type { AnnotationGroup } from './types.js';

const DEFAULT_METHODS = 'GET, PUT, POST, DELETE, PATCH, OPTIONS';
const DEFAULT_HEADERS =
  'DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,Cache-Control,Content-Type,Range,Authorization';

function list(pattern: RegExp, what: string): (value: string) => Checked<string> {
  return (value) => {
    if (value.length > 4096) return { ok: false, message: 'is longer than 4096 characters' };
    const items = value.split(',').map((s) => s.trim());
    if (items.some((item) => !pattern.test(item)))
      return { ok: false, message: `${show(value)} is not a comma-separated list of ${what}` };
    return { ok: true, value: items.join(', ') };
  };
}

/**
 * checkOrigins accepts `*` or a comma-separated list of `http(s)://host[:port]`, a host being a
 * name, an IP or `*.name` (one label, as ingress-nginx). Returns null for any origin.
 */
export function checkOrigins(value: string): Checked<string[] | null> {
  if (value.length > 16384) return { ok: false, message: 'is longer than 16384 characters' };
  const origins = value.split(',').map((s) => s.trim().toLowerCase());
  if (origins.includes('*')) return { ok: true, value: null };
  for (const origin of origins) {
    const match = /^https?:\/\/(\*\.)?([^/]+)$/.exec(origin);
    if (!match || !checkHostPort(match[2]).ok)
      return { ok: false, message: `${show(origin)} is not * or http(s)://host[:port]` };
  }
  return { ok: true, value: [...new Set(origins)].sort() };
}

/** corsGroup is enable-cors and the cors-* annotations, with ingress-nginx's defaults. */
export const corsGroup: AnnotationGroup<'cors'> = {
  name: 'CorsConfig',
  field: 'cors',
  keys: [
    {
      key: 'enable-cors',
      risk: 'Low',
      scope: 'ingress',
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
      support: 'supported',
      doc: '`*` (default) or http(s)://host[:port] list, `*.host` for one label',
    },
    {
      key: 'cors-allow-methods',
      risk: 'Medium',
      scope: 'ingress',
      support: 'supported',
      doc: `default \`${DEFAULT_METHODS}\``,
    },
    {
      key: 'cors-allow-headers',
      risk: 'Medium',
      scope: 'ingress',
      support: 'supported',
      doc:
        'default DNT, Keep-Alive, User-Agent, X-Requested-With, If-Modified-Since, Cache-Control, Content-Type, ' +
        'Range, Authorization',
    },
    {
      key: 'cors-expose-headers',
      risk: 'Medium',
      scope: 'ingress',
      support: 'supported',
      doc: 'Access-Control-Expose-Headers (none by default)',
    },
    {
      key: 'cors-allow-credentials',
      risk: 'Low',
      scope: 'ingress',
      support: 'supported',
      doc: 'Access-Control-Allow-Credentials (true by default)',
    },
    {
      key: 'cors-max-age',
      risk: 'Low',
      scope: 'ingress',
      support: 'supported',
      doc: 'preflight cache time, seconds (1728000 by default)',
    },
  ],
  parse(input) {
    const origins = read(input, 'cors-allow-origin', checkOrigins);
    const settings = {
      methods: read(input, 'cors-allow-methods', list(/^[A-Za-z]{1,32}$/, 'methods')) ?? DEFAULT_METHODS,
      headers: read(input, 'cors-allow-headers', list(/^[A-Za-z0-9_-]{1,64}$/, 'header names')) ?? DEFAULT_HEADERS,
      exposeHeaders:
        read(input, 'cors-expose-headers', list(/^([A-Za-z0-9_-]{1,64}|\*)$/, 'header names or *')) ?? null,
      credentials: readBool(input, 'cors-allow-credentials') ?? true,
      maxAge: read(input, 'cors-max-age', intIn(0, 2 ** 31 - 1)) ?? 1728000,
    };
    if (readBool(input, 'enable-cors') !== true) return null;
    return { origins: origins ?? null, settings };
  },
};
