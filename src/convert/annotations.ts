/**
 * The verdict on every ingress-nginx annotation when `convert` turns Ingresses into Gateway API objects: what it
 * becomes in the standard channel (GatewayClass, Gateway, HTTPRoute, ReferenceGrant), or why it cannot be said
 * there. One table, so it reads as documentation: docs/convert.md is generated from it (src/convert/docs.ts).
 */
import { supportedKeys } from '../model/annotations/registry.js';
import { refusedAnnotations } from '../model/annotations/refused.js';

/**
 * Verdict is what convert does with a key: `converted` (the same behaviour), `approximated` (converted, with a
 * difference `convert` reports on stderr every time) or `unexpressible` (reported on stderr, left out).
 */
export type Verdict = 'converted' | 'approximated' | 'unexpressible';

/** ConvertRule is one key's verdict: what it becomes, and the reason a report line gives. */
export interface ConvertRule {
  /** without the prefix: `rewrite-target` */
  readonly key: string;
  readonly verdict: Verdict;
  /** what the key becomes in Gateway API terms (empty when unexpressible) */
  readonly gateway: string;
  /** why it differs or cannot be said: the text of its stderr line */
  readonly reason: string;
}

const converted = (key: string, gateway: string, reason = ''): ConvertRule => ({
  key,
  verdict: 'converted',
  gateway,
  reason,
});
const approximated = (key: string, gateway: string, reason: string): ConvertRule => ({
  key,
  verdict: 'approximated',
  gateway,
  reason,
});
const unexpressible = (key: string, reason: string): ConvertRule => ({
  key,
  verdict: 'unexpressible',
  gateway: '',
  reason,
});

/**
 * HTTPS_REDIRECT_CODE is ingress-nginx's code for its HTTPS redirect (http-redirect-code, 308). The standard channel
 * RequestRedirect takes 308 since Gateway API v1.5 (Extended support; v1.2 to v1.4 took 301 and 302 only).
 */
export const HTTPS_REDIRECT_CODE = 308;

/** TRAILING_SLASH says how the HTTPS redirect differs unless preserve-trailing-slash is set. */
export const TRAILING_SLASH =
  'ingress-nginx drops a trailing `/` of the URI in its HTTPS redirect (preserve-trailing-slash is false by default); ' +
  'a RequestRedirect keeps the path as it is';

/** CORS_DIFFERENCE is what a converted CORS filter does differently from ingress-nginx, reported every time. */
export const CORS_DIFFERENCE =
  'a CORS filter answers a preflight with 200 and sends Allow-Methods, -Headers and Max-Age only to a preflight from ' +
  'an allowed origin (ingress-nginx: 204, and on every answer); its `*.host` origins match any number of labels ' +
  '(ingress-nginx: one)';

/** PASSTHROUGH_DIFFERENCE is how the converted passthrough is served differently, reported for each such Ingress. */
export const PASSTHROUGH_DIFFERENCE =
  'a TLS listener in Passthrough mode shares port 443 with the HTTPS listeners: ingress-actors serves both on one ' +
  'port under --enable-ssl-passthrough, as ingress-nginx needed that flag for the annotation (other implementations ' +
  'may report the listeners ProtocolConflict)';

/** POLICY_SCOPE says how a policy differs from the annotations: it is the Service port's, for every route to it. */
export const POLICY_SCOPE =
  "a BackendTLSPolicy is the Service port's: every route to that port (another Ingress's included) speaks TLS to it " +
  'and checks its certificate';

/** REDIRECT_CODES_NOTE says which redirect codes the standard channel takes. */
const REDIRECT_CODES_NOTE =
  'a standard-channel RequestRedirect takes 301, 302, 303, 307 and 308 (Gateway API v1.5 and later), not 300, 304, ' +
  '305 or 306';

/** TIMEOUT_DIFFERENCE says how timeouts.backendRequest differs from nginx's per-read and per-write timeouts. */
export const TIMEOUT_DIFFERENCE =
  'nginx bounds each read (or write) between two packets; Gateway API defines timeouts.backendRequest as the whole ' +
  'exchange with the backend, so an implementation that follows it cuts a response that streams for longer ' +
  '(ingress-actors applies it per read and write, as nginx does)';

/** The keys convert expresses, fully or nearly, and the notable ones it cannot. */
const RULES: readonly ConvertRule[] = [
  approximated(
    'rewrite-target',
    'URLRewrite ReplaceFullPath (a target without captures) or ReplacePrefixMatch `/` (the path `P(/|$)(.*)` with ' +
      'the target `/$2`)',
    'only a target without captures, or `/$2` after a path `P(/|$)(.*)`, is a Gateway API path modifier',
  ),
  approximated(
    'use-regex',
    'ImplementationSpecific paths become RegularExpression matches (`.*` appended unless the regex ends in `$`)',
    'ingress-nginx matches regex paths case-insensitively (`~*`); a RegularExpression match is case-sensitive',
  ),
  converted('app-root', 'an Exact `/` rule with RequestRedirect ReplaceFullPath to the root, 302'),
  approximated(
    'ssl-redirect',
    'on TLS hosts (its default), the HTTP listener gets a RequestRedirect route to https with 308, as ingress-nginx ' +
      'answers (`http-redirect-code`)',
    TRAILING_SLASH,
  ),
  approximated(
    'force-ssl-redirect',
    'the HTTP listener gets a RequestRedirect route to https with 308, with or without TLS here',
    TRAILING_SLASH,
  ),
  converted('preserve-trailing-slash', 'nothing: a RequestRedirect keeps the path as it is, trailing `/` included'),
  approximated(
    'permanent-redirect',
    'RequestRedirect with the URL split into scheme, hostname, port and ReplaceFullPath; 301',
    'a URL with a query is not a standard-channel RequestRedirect',
  ),
  approximated('permanent-redirect-code', 'RequestRedirect statusCode', REDIRECT_CODES_NOTE),
  approximated(
    'temporal-redirect',
    'RequestRedirect as permanent-redirect, 302',
    'a URL with a query is not a standard-channel RequestRedirect',
  ),
  approximated('temporal-redirect-code', 'RequestRedirect statusCode', REDIRECT_CODES_NOTE),
  approximated(
    'upstream-vhost',
    'URLRewrite hostname',
    'a URLRewrite hostname is a DNS name: an IP or a :port is not expressible',
  ),
  converted('x-forwarded-prefix', 'RequestHeaderModifier set X-Forwarded-Prefix'),
  converted('canary', 'the canary Ingress folds into the rules of the Ingress it shadows'),
  converted('canary-weight', 'weighted backendRefs on the main rule (main: total - weight, canary: weight)'),
  converted('canary-weight-total', 'the sum of the two weights'),
  converted(
    'canary-by-header',
    'a rule with the header match `always` (or the value) to the canary, and `never` to the main backend',
  ),
  converted('canary-by-header-value', 'the value of that header match'),
  unexpressible('canary-by-cookie', 'HTTPRoute matches have no cookie match (a Cookie header match is not the same)'),
  unexpressible('canary-by-header-pattern', 'a RegularExpression header match is implementation-specific'),
  approximated('proxy-read-timeout', 'timeouts.backendRequest (the larger of the two)', TIMEOUT_DIFFERENCE),
  approximated('proxy-send-timeout', 'timeouts.backendRequest (the larger of the two)', TIMEOUT_DIFFERENCE),
  unexpressible('proxy-body-size', 'Gateway API has no request body limit'),
  unexpressible(
    'server-alias',
    'ingress-actors does not serve it either; add the names to the spec.hostnames of the converted route',
  ),
  unexpressible('proxy-connect-timeout', 'Gateway API has no connect timeout'),
  converted(
    'custom-headers',
    "ResponseHeaderModifier set from the ConfigMap's entries, when the ConfigMap is in the manifests",
  ),
  approximated(
    'backend-protocol',
    'HTTPS with proxy-ssl-verify on: a BackendTLSPolicy on each backend Service port (HTTP needs nothing)',
    `${POLICY_SCOPE}; HTTPS without the check, and gRPC (a GRPCRoute), are not converted`,
  ),
  approximated(
    'proxy-ssl-secret',
    'its ca.crt copied into a ConfigMap beside the BackendTLSPolicy, which names it in caCertificateRefs',
    "its client certificate (tls.crt) is a Gateway's spec.tls.backend.clientCertificateRef, shown to all its " +
      'backends: not converted',
  ),
  converted('proxy-ssl-verify', 'on: a BackendTLSPolicy (off: HTTPS without the check has no Gateway API form)'),
  converted('proxy-ssl-name', 'BackendTLSPolicy validation.hostname (required: the policy checks that name)'),
  approximated(
    'proxy-ssl-server-name',
    'a BackendTLSPolicy always sends its hostname as SNI',
    'off (the default) sends no SNI in ingress-nginx',
  ),
  approximated(
    'auth-tls-secret',
    "the Gateway's spec.tls.frontend.default validation, its ca.crt copied into a ConfigMap, when every HTTPS host " +
      'of the Gateway asks the same',
    'Gateway API validates client certificates per port, not per host: hosts that ask differently (or not at all) ' +
      'leave every ask out; plain HTTP is not validated (ingress-nginx answers it 403)',
  ),
  approximated(
    'auth-tls-verify-client',
    'on: AllowValidOnly; optional_no_ca and optional: AllowInsecureFallback',
    'AllowInsecureFallback lets in an invalid certificate, which optional answers 400',
  ),
  approximated('enable-cors', 'a CORS filter', CORS_DIFFERENCE),
  converted('cors-allow-origin', 'CORS allowOrigins (http and https origins only)'),
  converted('cors-allow-methods', 'CORS allowMethods'),
  converted('cors-allow-headers', 'CORS allowHeaders'),
  converted('cors-expose-headers', 'CORS exposeHeaders'),
  converted('cors-allow-credentials', 'CORS allowCredentials'),
  converted('cors-max-age', 'CORS maxAge (at least 1)'),
  unexpressible('mirror-target', 'RequestMirror mirrors to a backendRef, not to a URL'),
  unexpressible('from-to-www-redirect', 'it needs a second hostname and a redirect route convert does not guess'),
  unexpressible('default-backend', 'Gateway API has no per-route backend for failed or missing endpoints'),
  unexpressible('custom-http-errors', 'Gateway API cannot replace the backend\u2019s error responses'),
  approximated(
    'ssl-passthrough',
    'a TLS listener (Passthrough) on 443 and a TLSRoute per host the Ingress owns, to its `/` path\u2019s backend',
    PASSTHROUGH_DIFFERENCE,
  ),
  unexpressible('allowlist-source-range', 'Gateway API routes cannot match on the client address'),
  unexpressible('denylist-source-range', 'Gateway API routes cannot match on the client address'),
  unexpressible('whitelist-source-range', 'Gateway API routes cannot match on the client address'),
  unexpressible('configuration-snippet', 'nginx directives have no Gateway API form'),
  unexpressible('server-snippet', 'nginx directives have no Gateway API form'),
  unexpressible('affinity', 'session persistence is not in the standard channel'),
  unexpressible('load-balance', 'the balancing algorithm is implementation-specific'),
  unexpressible('upstream-hash-by', 'the balancing algorithm is implementation-specific'),
];

/** Reasons by key prefix, for the keys the table does not name one by one. */
const FAMILIES: readonly (readonly [string, string])[] = [
  ['auth-tls-', 'the verification depth, error page, certificate passing and CN match have no Gateway API field'],
  ['auth-', 'authentication is not in the standard channel'],
  ['limit-', 'rate and connection limits are not in the standard channel'],
  ['session-cookie-', 'session persistence is not in the standard channel'],
  ['affinity-', 'session persistence is not in the standard channel'],
  ['upstream-hash-by', 'the balancing algorithm is implementation-specific'],
  ['proxy-ssl-', 'TLS versions, ciphers and the verification depth to the backend have no Gateway API field'],
  ['proxy-', 'nginx proxy tuning has no Gateway API field'],
  ['client-', 'request body limits have no Gateway API field'],
  ['mirror-', 'RequestMirror mirrors to a backendRef, not to a URL'],
  ['modsecurity', 'a web application firewall is not in Gateway API'],
  ['enable-', 'an nginx feature switch with no Gateway API field'],
  ['opentelemetry-', 'tracing is not in Gateway API'],
  ['ssl-', 'TLS settings per route are not in the standard channel'],
  ['fastcgi-', 'FastCGI backends are not in Gateway API'],
];

/** GENERIC is the reason of a key neither the table nor a family names. */
const GENERIC = 'no Gateway API standard-channel field says this';

const byKey = new Map(RULES.map((r) => [r.key, r]));

/** convertRule is the verdict on one key (without the prefix); keys the table does not list are unexpressible. */
export function convertRule(key: string): ConvertRule {
  const rule = byKey.get(key);
  if (rule) return rule;
  const family = FAMILIES.find(([prefix]) => key.startsWith(prefix));
  return unexpressible(key, family?.[1] ?? GENERIC);
}

/** convertRules is the verdict on every annotation this controller knows, supported or refused, sorted by key. */
export function convertRules(): readonly ConvertRule[] {
  const keys = new Set<string>([
    ...supportedKeys.flatMap(({ key }) => [key.key, ...(key.aliases ?? [])]),
    ...refusedAnnotations.map((r) => r.key),
    ...RULES.map((r) => r.key),
  ]);
  return [...keys].sort().map(convertRule);
}
