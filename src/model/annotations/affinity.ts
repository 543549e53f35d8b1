import { checkHost, checkPath, show, type Checked } from '../validate.js';
import { intIn, oneOf, read, readBool } from './read.js';
import type { AnnotationGroup } from './types.js';

/**
 * checkCookieName accepts a cookie name: RFC 6265 token characters that need no quoting in nginx and mean
 * nothing in a regex once escaped: letters, digits and `_ - . ~`, at most 64. A name of letters, digits and `_`
 * is read as `$cookie_<name>`; any other through a map on `$http_cookie` (see HttpExtras.cookie).
 */
export function checkCookieName(value: string): Checked<string> {
  if (value.length <= 64 && /^[A-Za-z0-9_.~-]{1,64}$/.test(value)) return { ok: true, value };
  return {
    ok: false,
    message: `${show(value)}: a cookie name here holds letters, digits and _ - . ~ only (at most 64)`,
  };
}

/**
 * affinityGroup is cookie affinity: the upstream hashes a cookie (`hash ... consistent`, or the Lua
 * balancer's sticky method), and a client without it gets one holding a random key ($request_id), so its
 * later requests reach the same endpoint: rendered, while the endpoints stay the same; with the Lua
 * balancer, while that endpoint stays (nginx remembers which endpoint each key reached).
 */
export const affinityGroup: AnnotationGroup<'affinity'> = {
  name: 'SessionAffinity',
  field: 'affinity',
  keys: [
    {
      key: 'affinity',
      risk: 'Low',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'partial',
      doc: '`cookie`: requests with the same cookie reach the same endpoint (consistent hash on the cookie)',
      note:
        'the cookie holds a random key, not the endpoint; the Lua balancer remembers the endpoint each key reached ' +
        'and keeps it while it stays an endpoint; rendered (--dynamic-backends=false), when endpoints change a few ' +
        'sessions move (as affinity-mode balanced); the Ingress gets upstreams of its own',
    },
    {
      key: 'affinity-mode',
      risk: 'Medium',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'partial',
      doc: '`balanced` or `persistent`; both behave as balanced',
    },
    {
      key: 'session-cookie-name',
      risk: 'Medium',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'default INGRESSCOOKIE; letters, digits and _ - . ~',
    },
    {
      key: 'session-cookie-path',
      risk: 'Medium',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'supported',
      doc: "the cookie's Path (default: the location's path, / for regex paths)",
    },
    {
      key: 'session-cookie-max-age',
      risk: 'Medium',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'Max-Age in seconds (a session cookie by default)',
    },
    {
      key: 'session-cookie-expires',
      risk: 'Medium',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'partial',
      doc: "seconds: the cookie's Expires, that far from the request (`Mon, 02-Jan-06 15:04:05 GMT`, as ingress-nginx)",
      note: 'without Lua (--dynamic-backends=false) nginx cannot compute a date: sent as Max-Age unless max-age is set',
    },
    {
      key: 'session-cookie-domain',
      risk: 'Medium',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'supported',
      doc: "the cookie's Domain",
    },
    {
      key: 'session-cookie-samesite',
      risk: 'Low',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'None, Lax or Strict',
    },
    {
      key: 'session-cookie-secure',
      risk: 'Low',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'add Secure; without it (or false) Secure only over HTTPS, as ingress-nginx',
    },
    {
      key: 'session-cookie-change-on-failure',
      risk: 'Low',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'partial',
      doc: "accepted; a failed endpoint's sessions move on the next request anyway",
    },
  ],
  parse(input) {
    const type = read(input, 'affinity', oneOf(['cookie'] as const));
    read(input, 'affinity-mode', oneOf(['balanced', 'persistent'] as const));
    readBool(input, 'session-cookie-change-on-failure');
    const cookieName = read(input, 'session-cookie-name', checkCookieName) ?? 'INGRESSCOOKIE';
    const path = read(input, 'session-cookie-path', checkPath) ?? null;
    const seconds = intIn(0, 2 ** 31 - 1);
    const maxAge = read(input, 'session-cookie-max-age', seconds) ?? null;
    const expires = read(input, 'session-cookie-expires', seconds) ?? null;
    const domain = read(input, 'session-cookie-domain', (v) => checkHost(v.replace(/^\./, ''))) ?? null;
    const sameSite = read(input, 'session-cookie-samesite', oneOf(['None', 'Lax', 'Strict'] as const, true)) ?? null;
    const secure = readBool(input, 'session-cookie-secure') ?? false;
    if (type === undefined) return null;
    return { cookieName, path, maxAge, expires, domain, sameSite, secure };
  },
};
