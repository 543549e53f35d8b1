import type { RefusedAnnotation } from './types.js';

const denied = (
  key: string,
  risk: RefusedAnnotation['risk'],
  scope: RefusedAnnotation['scope'],
  reason: string,
): RefusedAnnotation => ({ key, risk, scope, effect: 'denied', reason });
const ignored = (
  key: string,
  risk: RefusedAnnotation['risk'],
  scope: RefusedAnnotation['scope'],
  reason: string,
): RefusedAnnotation => ({ key, risk, scope, effect: 'ignored', reason });

/**
 * refusedAnnotations are ingress-nginx's annotations (its risk table) this controller does not
 * implement. A security feature whose absence would make serving unsafe fails closed: the
 * Ingress's locations answer 503 (`denied`); the others are reported and the Ingress is served
 * without them.
 */
export const refusedAnnotations: readonly RefusedAnnotation[] = [
  ignored('server-alias', 'High', 'ingress', 'extra server names are not implemented; add the hosts as rules'),
  ignored(
    'canary-by-header-pattern',
    'Medium',
    'ingress',
    'regex header matching is not implemented; use canary-by-header-value',
  ),
  denied(
    'auth-tls-match-cn',
    'High',
    'location',
    "matching the client certificate's CN is not implemented; serving without " +
      'it would let any certificate of the CA in',
  ),
  ignored(
    'connection-proxy-header',
    'Low',
    'location',
    'the Connection header follows Upgrade, as nginx.conf sets it for every location',
  ),
  ignored('custom-headers', 'Medium', 'location', 'response headers from a ConfigMap are not implemented'),
  ignored(
    'disable-proxy-intercept-errors',
    'Low',
    'location',
    'errors are intercepted only with custom-http-errors anyway',
  ),
  ignored('enable-global-auth', 'Low', 'location', 'there is no global-auth-url here'),
  denied(
    'auth-snippet',
    'Critical',
    'location',
    'snippets in the auth subrequest are not implemented; serving without it could skip part of the authentication',
  ),
  ...[
    ['auth-cache-duration', 'Medium'],
    ['auth-cache-key', 'Medium'],
  ].map(([k, r]) =>
    ignored(
      k!,
      r as RefusedAnnotation['risk'],
      'location',
      'auth answers are not cached: every request asks the auth service',
    ),
  ),
  ...[
    ['auth-keepalive', 'Low'],
    ['auth-keepalive-requests', 'Low'],
    ['auth-keepalive-share-vars', 'Low'],
    ['auth-keepalive-timeout', 'Low'],
  ].map(([k, r]) =>
    ignored(k!, r as RefusedAnnotation['risk'], 'location', 'the auth subrequest uses a new connection each time'),
  ),
  ignored(
    'auth-proxy-set-headers',
    'Medium',
    'location',
    'extra headers for the auth subrequest from a ConfigMap are not implemented',
  ),
  ignored('auth-request-redirect', 'Medium', 'location', 'X-Auth-Request-Redirect is always the request URI'),
  ignored('fastcgi-index', 'Medium', 'location', 'FastCGI backends are refused (backend-protocol FCGI)'),
  ignored('fastcgi-params-configmap', 'Medium', 'location', 'FastCGI backends are refused (backend-protocol FCGI)'),
  ignored('http2-push-preload', 'Low', 'location', 'HTTP/2 push is gone from browsers and from nginx 1.25'),
  ignored(
    'enable-access-log',
    'Low',
    'location',
    'per-Ingress access logs are not implemented (see disable-access-log)',
  ),
  ignored('enable-rewrite-log', 'Low', 'location', 'per-Ingress rewrite logs are not implemented'),
  ignored('mirror-target', 'High', 'ingress', 'request mirroring is not implemented'),
  ignored('mirror-host', 'High', 'ingress', 'request mirroring is not implemented'),
  ignored('mirror-request-body', 'Low', 'ingress', 'request mirroring is not implemented'),
  ...['proxy-cookie-domain', 'proxy-cookie-path'].map((k) =>
    ignored(k, 'Medium', 'location', 'rewriting upstream cookies is not implemented'),
  ),
  ignored(
    'proxy-max-temp-file-size',
    'Low',
    'location',
    'responses are not buffered to disk by default (proxy-buffering off)',
  ),
  ignored(
    'limit-allowlist',
    'Low',
    'location',
    'exempting addresses from limit-rps needs a geo map per Ingress, not implemented; everyone is limited',
  ),
  ignored('from-to-www-redirect', 'Low', 'location', 'www redirects are not implemented'),
  ignored('ssl-ciphers', 'Low', 'ingress', 'per-host ciphers are not implemented; use the ssl-ciphers ConfigMap key'),
  ignored('ssl-prefer-server-ciphers', 'Low', 'ingress', 'always on'),
  ignored('satisfy', 'Low', 'location', "all access rules must be met (nginx's satisfy all)"),
  ignored(
    'stream-snippet',
    'Critical',
    'ingress',
    'snippets in the stream block (TCP/UDP services, ssl-passthrough) are not implemented',
  ),
  ignored('affinity-canary-behavior', 'Low', 'ingress', 'sticky canaries are not implemented'),
  ignored(
    'session-cookie-conditional-samesite-none',
    'Low',
    'ingress',
    'browser sniffing is not implemented; SameSite is sent as set',
  ),
  ignored('session-cookie-partitioned', 'Low', 'ingress', 'Partitioned cookies are not implemented'),
  ignored('use-port-in-redirects', 'Low', 'location', "redirects use the request's host and the --https-port"),
  ...['global-rate-limit', 'global-rate-limit-window', 'global-rate-limit-key', 'global-rate-limit-ignored-cidrs'].map(
    (k) =>
      ignored(k, 'Low', 'location', 'global rate limiting needs Lua and memcached; use limit-rps (per nginx instance)'),
  ),
];
