import { checkHeaderName, checkHostPort, show, type Checked } from '../validate.js';
import { noteWithout, oneOf, read, readBool } from './read.js';
import type { AnnotationGroup, ExternalAuthAnnotations } from './types.js';

/**
 * The nginx variables an auth URL may name, as oauth2-proxy's setups write them
 * (`https://$host/oauth2/auth`, `…/start?rd=$escaped_request_uri`). Any other `$` is refused.
 */
const URL_VARIABLES = ['host', 'http_host', 'best_http_host', 'scheme', 'request_uri', 'escaped_request_uri'];
const VARIABLE = new RegExp(`\\$(?:${URL_VARIABLES.join('|')})(?![A-Za-z0-9_])`, 'g');

/**
 * HOST_VARIABLE is the one variable a URL's authority may be: `$host`, the name of the server
 * nginx chose. `$http_host` and `$best_http_host` are the Host header as the client wrote it,
 * which need not be the host the request was routed on (`GET http://a.example/ HTTP/1.1` with
 * `Host: attacker.example`), so the client would choose the auth server (issue 14, finding 4).
 * Where the server name is not exact (a wildcard, the catch-all), `$host` is the client's choice
 * too: the plan refuses it there (checkAuthUrlHost).
 */
export const HOST_VARIABLE = '$host';

/**
 * checkAuthUrl accepts an http(s) URL of plain characters whose `$` only start one of
 * URL_VARIABLES, with an authority of a host[:port] or `$host`, and returns it with its host
 * (for the Host header of the subrequest).
 */
export function checkAuthUrl(value: string): Checked<{ url: string; host: string }> {
  const bad = {
    ok: false as const,
    message:
      `${show(value)} is not an http(s) URL of plain characters (nginx variables: $` + `${URL_VARIABLES.join(', $')})`,
  };
  if (value.length > 2048) return bad;
  const match = /^https?:\/\/([^/?#]+)([/?][A-Za-z0-9._~!&()*+,=:@/?%$-]*)?$/.exec(value);
  if (!match) return bad;
  const host = match[1]!;
  if (host.includes('$') && host !== HOST_VARIABLE) {
    return {
      ok: false,
      message:
        `${show(value)}: the URL's host is ${show(host)}, which the client chooses (any Host header, whatever ` +
        'host it asked for), so it would choose the server; use a name, an IP or $host',
    };
  }
  if ((host !== HOST_VARIABLE && !checkHostPort(host).ok) || (match[2] ?? '').replace(VARIABLE, '').includes('$'))
    return bad;
  return { ok: true, value: { url: value, host } };
}

/**
 * checkAuthUrlHost says why an auth-url whose authority is `$host` may not serve `host`: on a
 * wildcard host or the catch-all (`_`), `$host` is whatever name the client sent. Null when it may.
 */
export function checkAuthUrlHost(authHost: string, host: string, catchAll: string): string | null {
  if (authHost !== HOST_VARIABLE) return null;
  if (host === catchAll)
    return (
      "the URL's host is $host, which on a rule without a host is whatever name the client sends (so it would " +
      'choose the auth server); name the auth service instead'
    );
  if (host.startsWith('*.'))
    return (
      `the URL's host is $host, which on the wildcard host ${show(host)} is whatever name under it the client ` +
      'sends (so it would choose the auth server); name the auth service instead'
    );
  return null;
}

/** checkHeaderList accepts a comma-separated list of header names (auth-response-headers). */
function checkHeaderList(value: string): Checked<string[]> {
  const names = value
    .split(',')
    .map((h) => h.trim())
    .filter(Boolean);
  const bad = names.find((h) => !checkHeaderName(h).ok);
  if (names.length === 0 || bad !== undefined)
    return { ok: false, message: `${show(bad ?? value)} is not a header name (letters, digits and '-')` };
  return { ok: true, value: [...new Set(names)] };
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/**
 * withRedirect appends ingress-nginx's return address to a sign-in URL, unless it names one:
 * `rd=` (auth-signin-redirect-param) the scheme, host and escaped request URI.
 */
function withRedirect(signin: string, param: string): string {
  if (signin.includes(`?${param}=`) || signin.includes(`&${param}=`)) return signin;
  return `${signin}${signin.includes('?') ? '&' : '?'}${param}=$pass_access_scheme://$http_host$escaped_request_uri`;
}

/**
 * externalAuthGroup is auth-url: every request first goes, without its body, to the auth
 * service (auth_request); a 2xx lets it through, 401 or 403 refuses it. auth-signin sends a 401
 * to a sign-in page instead, and auth-response-headers copies headers of the auth answer into
 * the proxied request.
 */
export const externalAuthGroup: AnnotationGroup<'externalAuth'> = {
  name: 'ExternalAuth',
  field: 'externalAuth',
  keys: [
    {
      key: 'auth-url',
      risk: 'High',
      scope: 'location',
      onInvalid: 'deny',
      support: 'supported',
      doc:
        'auth_request to this http(s) URL first, without the body; 2xx passes, 401/403 refuse, an unreachable ' +
        'service fails closed (500). A host name is looked up per request with the nameservers of the ' +
        "controller's /etc/resolv.conf. The URL's host is a name, an IP or `$host`, and `$host` only on rules " +
        'with an exact host (on a wildcard host or a rule without host the client would choose it; such a rule ' +
        'is left out); never `$http_host` or `$best_http_host`, which the client sets. Variables may stay in the ' +
        'path and query',
    },
    {
      key: 'auth-method',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'deny',
      support: 'supported',
      doc: 'the method of the auth subrequest (GET by default)',
    },
    {
      key: 'auth-signin',
      risk: 'High',
      scope: 'location',
      onInvalid: 'deny',
      support: 'partial',
      doc:
        'a 401 from the auth service redirects (302) here, with `rd=` the original URL. As ingress-nginx, its ' +
        'host may be `$host` on any rule (the redirect goes back to the client that chose it), but not ' +
        '`$http_host` or `$best_http_host`',
      note:
        '`$escaped_request_uri` is the request URI escaped as a query component (ngx.escape_uri: letters, digits ' +
        "and -._~!*'() stay). Without Lua (--dynamic-backends=false) nginx.conf escapes with maps: the first 24 " +
        'characters to escape, the URI cut after the last of them, and bytes outside ASCII left out',
    },
    {
      key: 'auth-signin-redirect-param',
      risk: 'Medium',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'the name of the return-address parameter added to auth-signin (`rd`)',
    },
    {
      key: 'auth-always-set-cookie',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc:
        "the auth answer's Set-Cookie reaches the client whatever the backend answers; without it (as ingress-nginx) " +
        "only with the backend's 2xx and 3xx (nginx's add_header without always)",
    },
    {
      key: 'auth-response-headers',
      risk: 'Medium',
      scope: 'location',
      onInvalid: 'deny',
      support: 'supported',
      doc: 'headers of the auth answer passed on to the backend, comma-separated',
    },
  ],
  parse(input): ExternalAuthAnnotations | null {
    const companions = [
      'auth-method',
      'auth-signin',
      'auth-signin-redirect-param',
      'auth-response-headers',
      'auth-always-set-cookie',
    ];
    if (input.get('auth-url') === undefined) {
      // Without auth-url its companions do nothing, so a bad one costs nothing either.
      noteWithout(input, companions, 'auth-url');
      return null;
    }
    const url = read(input, 'auth-url', checkAuthUrl);
    const method = read(input, 'auth-method', oneOf(METHODS, true)) ?? 'GET';
    const signin = read(input, 'auth-signin', checkAuthUrl);
    const param =
      read(input, 'auth-signin-redirect-param', (v) =>
        /^[A-Za-z0-9_-]{1,64}$/.test(v)
          ? { ok: true, value: v }
          : { ok: false, message: `${show(v)} is not a query parameter name` },
      ) ?? 'rd';
    const responseHeaders = read(input, 'auth-response-headers', checkHeaderList) ?? [];
    const alwaysSetCookie = readBool(input, 'auth-always-set-cookie') ?? false;
    // An invalid auth-url has denied the Ingress's locations already.
    if (url === undefined) return null;
    return {
      url: url.url,
      host: url.host,
      method,
      signin: signin ? withRedirect(signin.url, param) : null,
      responseHeaders,
      alwaysSetCookie,
    };
  },
};
