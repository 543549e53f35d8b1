/**
 * The annotations `convert` expresses, read from one Ingress through the validators the Ingress model uses (a value
 * the model refuses is reported and left out, never copied), plus the Gateway API's own checks where its field is
 * narrower (a URLRewrite hostname is a DNS name, a header value has no `$`).
 */
import { checkCanaryHeaderValue } from '../model/annotations/canary.js';
import { checkPrefix } from '../model/annotations/forwarded-prefix.js';
import { intIn } from '../model/annotations/read.js';
import { checkRewriteTarget } from '../model/annotations/rewrite.js';
import { ANNOTATION_PREFIX } from '../model/annotations/types.js';
import { isCanary, supportedKeys } from '../model/annotations/registry.js';
import { refusedAnnotations } from '../model/annotations/refused.js';
import { compare } from '../model/backends.js';
import { checkDuration, REDIRECT_CODES } from '../model/gateway/read-rule.js';
import { checkHeaderValue } from '../model/gateway/values.js';
import type { ConfigMap, Ingress, Secret } from '../model/snapshot.js';
import {
  type Checked,
  checkBool,
  checkHeaderName,
  checkHost,
  checkHostPort,
  checkHttpUrl,
  checkObjectName,
  checkPath,
  checkSeconds,
  checkDnsLabel,
  show,
} from '../model/validate.js';
import { convertRule, TIMEOUT_DIFFERENCE } from './annotations.js';
import { BACKEND_TLS_KEYS, type BackendTlsAsk, readBackendTls } from './backend-tls.js';
import { corsFilter } from './cors.js';
import { CLIENT_CA_KEYS, type ClientCaAsk, readClientCa } from './frontend-tls.js';

/** the keys of a CORS filter (src/convert/cors.ts) */
const CORS_KEYS = [
  'enable-cors',
  'cors-allow-origin',
  'cors-allow-methods',
  'cors-allow-headers',
  'cors-expose-headers',
  'cors-allow-credentials',
  'cors-max-age',
];

/** Report records one thing convert could not express: the field (or annotation) and why. */
export type Report = (field: string, reason: string) => void;

type RedirectCode = (typeof REDIRECT_CODES)[number];

/** Redirect is a RequestRedirect's fields, all validated. */
export interface Redirect {
  readonly scheme?: 'http' | 'https';
  readonly hostname?: string;
  readonly port?: number;
  readonly path?: string;
  readonly statusCode: RedirectCode;
}

/** Settings are what one Ingress's annotations ask for that Gateway API can say. */
export interface Settings {
  readonly rewriteTarget: string | null;
  readonly useRegex: boolean;
  readonly appRoot: string | null;
  /** null: unset (ingress-nginx's default: redirect TLS hosts) */
  readonly sslRedirect: boolean | null;
  readonly forceSslRedirect: boolean;
  readonly preserveTrailingSlash: boolean;
  readonly redirect: Redirect | null;
  readonly vhost: string | null;
  readonly forwardedPrefix: string | null;
  readonly responseHeaders: readonly { readonly name: string; readonly value: string }[];
  /** the CORS filter enable-cors and cors-* ask for (src/convert/cors.ts) */
  readonly cors: Record<string, unknown> | null;
  /** Gateway API Duration for timeouts.backendRequest */
  readonly timeout: string | null;
  /** backend-protocol HTTPS with proxy-ssl-*: a BackendTLSPolicy on its backends (src/convert/backend-tls.ts) */
  readonly backendTls: BackendTlsAsk | null;
  /** auth-tls-secret and auth-tls-verify-client: the Gateway's frontend validation (src/convert/frontend-tls.ts) */
  readonly clientCa: ClientCaAsk | null;
  /** ssl-passthrough: the hosts it owns become TLSRoutes (src/convert/passthrough.ts) */
  readonly sslPassthrough: boolean;
  readonly canary: {
    /** a canary annotation (or any other) has an invalid value: the model leaves the whole canary out */
    readonly leftOut: boolean;
    readonly header: string | null;
    readonly headerValue: string | null;
    readonly weight: number | null;
    readonly total: number;
  } | null;
}

const full = (key: string) => `metadata.annotations.${ANNOTATION_PREFIX}${key}`;

const KNOWN: ReadonlySet<string> = new Set([
  ...supportedKeys.flatMap(({ key }) => [key.key, ...(key.aliases ?? [])]),
  ...refusedAnnotations.map((r) => r.key),
]);

/** Keys read below: their verdict lines come from the conversion itself, with what exactly differs. */
const READ_HERE: ReadonlySet<string> = new Set([
  'rewrite-target',
  'use-regex',
  'app-root',
  'ssl-redirect',
  'force-ssl-redirect',
  'preserve-trailing-slash',
  'permanent-redirect',
  'permanent-redirect-code',
  'temporal-redirect',
  'temporal-redirect-code',
  'upstream-vhost',
  'x-forwarded-prefix',
  'proxy-read-timeout',
  'proxy-send-timeout',
  'custom-headers',
  'canary',
  'canary-by-header',
  'canary-by-header-value',
  'canary-weight',
  'canary-weight-total',
  'ssl-passthrough',
  ...CORS_KEYS,
  ...BACKEND_TLS_KEYS,
  ...CLIENT_CA_KEYS,
]);

/** Values that ask for nothing: a switch turned off, or the default protocol. */
function asksNothing(key: string, value: string): boolean {
  if (key === 'backend-protocol') return value.toUpperCase() === 'HTTP';
  return value === 'false' && (key.startsWith('enable-') || key === 'ssl-passthrough' || key === 'service-upstream');
}

/** isCanaryIngress says whether an Ingress is a canary, as the model reads its `canary` annotation. */
export function isCanaryIngress(ingress: Ingress): boolean {
  return isCanary(ingress.metadata?.annotations?.[`${ANNOTATION_PREFIX}canary`]);
}

/**
 * toDuration turns an nginx time checkSeconds passed (it gives only `\d+(ms|s|m|h|d)`: `60s`, `2m`, `1d`) into a
 * Gateway API Duration, or null when too long.
 */
function toDuration(time: string): string | null {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(time)!;
  const n = Number(match[1]);
  const [value, unit] = match[2] === 'd' ? [n * 24, 'h'] : [n, match[2]];
  return value <= 99_999 ? `${value}${unit}` : null;
}

/** millis is a Duration toDuration made (so one checkDuration passes) in milliseconds, to pick the larger of two. */
function millis(duration: string): number {
  const checked = checkDuration(duration);
  return checked.ok ? checked.value : 0;
}

/** readRedirectUrl splits a permanent or temporal redirect URL into RequestRedirect fields; null when it cannot. */
function readRedirectUrl(url: string, code: RedirectCode, key: string, report: Report): Redirect | null {
  const match = /^(https?):\/\/([^/?#]+)(\/[^?#]*)?(\?.*)?$/.exec(url);
  if (!match) return null;
  if (match[4] !== undefined) {
    report(full(key), `${show(url)} has a query, which a RequestRedirect cannot set; left out`);
    return null;
  }
  const scheme = match[1] as 'http' | 'https';
  const [, host, port] = /^(.*?)(?::(\d+))?$/.exec(match[2]!)!;
  const hostname = checkHost(host!.toLowerCase());
  if (!hostname.ok || hostname.value.startsWith('*')) {
    report(full(key), `${show(host)} is not a DNS name a RequestRedirect accepts; left out`);
    return null;
  }
  const path = match[3] ? checkPath(match[3]) : ({ ok: true, value: '/' } as const);
  if (!path.ok) {
    report(full(key), `the URL's path: ${path.message}; left out`);
    return null;
  }
  return {
    scheme,
    hostname: hostname.value,
    ...(port === undefined ? {} : { port: Number(port) }),
    path: path.value,
    statusCode: code,
  };
}

/**
 * readSettings reads an Ingress's annotations: each one convert expresses through its validator, every other one
 * reported with its verdict's reason.
 */
export function readSettings(
  ingress: Ingress,
  namespace: string,
  configMap: (namespace: string, name: string) => ConfigMap | undefined,
  secret: (namespace: string, name: string) => Secret | undefined,
  report: Report,
): Settings {
  const values = new Map<string, string>();
  for (const [key, value] of Object.entries(ingress.metadata?.annotations ?? {}))
    if (key.startsWith(ANNOTATION_PREFIX) && typeof value === 'string')
      values.set(key.slice(ANNOTATION_PREFIX.length), value);
  const canary = isCanaryIngress(ingress);
  for (const [key, value] of [...values].sort(([a], [b]) => compare(a, b))) {
    if (!KNOWN.has(key))
      // Quoted unless plain: a key from a file may hold anything, a line break included.
      report(
        /^[a-z0-9-]{1,100}$/.test(key) ? full(key) : `metadata.annotations[${show(ANNOTATION_PREFIX + key)}]`,
        'is not an ingress-nginx annotation this controller knows; left out',
      );
    // A canary's other annotations are ignored by ingress-nginx too (its main Ingress's apply).
    else if (canary && !key.startsWith('canary')) continue;
    else if (!READ_HERE.has(key) && !asksNothing(key, value)) report(full(key), `${convertRule(key).reason}; left out`);
  }
  // As the model (annotations/registry.ts, outcome `canary`): a canary with any invalid value is left out whole, so
  // that it takes no traffic the controller would not send it.
  let canaryLeftOut = false;
  const invalid = (key: string, message: string) => {
    if (canary) canaryLeftOut = true;
    report(full(key), `${message}; ${canary ? 'canary Ingress left out' : 'left out'}`);
  };
  const read = <T>(key: string, check: (value: string) => Checked<T>): T | undefined => {
    const value = values.get(key);
    if (value === undefined || value === '') return undefined;
    const checked = check(value);
    if (checked.ok) return checked.value;
    invalid(key, checked.message);
    return undefined;
  };
  const bool = (key: string) => read(key, checkBool) ?? null;

  const permanentCode = read('permanent-redirect-code', intIn(300, 308));
  const temporalCode = read('temporal-redirect-code', intIn(300, 308));
  const permanent = read('permanent-redirect', checkHttpUrl);
  const temporal = read('temporal-redirect', checkHttpUrl);
  const codeOf = (key: string, code: number | undefined, fallback: RedirectCode): RedirectCode => {
    if (code === undefined) return fallback;
    if ((REDIRECT_CODES as readonly number[]).includes(code)) return code as RedirectCode;
    report(full(key), `${code}: ${convertRule(key).reason}; converted to ${fallback}`);
    return fallback;
  };
  // As ingress-nginx: the temporal redirect wins when both are set.
  const redirect =
    temporal !== undefined
      ? readRedirectUrl(temporal, codeOf('temporal-redirect-code', temporalCode, 302), 'temporal-redirect', report)
      : permanent !== undefined
        ? readRedirectUrl(
            permanent,
            codeOf('permanent-redirect-code', permanentCode, 301),
            'permanent-redirect',
            report,
          )
        : null;

  const rawVhost = read('upstream-vhost', checkHostPort);
  let vhost: string | null = null;
  if (rawVhost !== undefined) {
    const precise = checkHost(rawVhost);
    if (precise.ok && !precise.value.startsWith('*')) vhost = precise.value;
    else report(full('upstream-vhost'), `${show(rawVhost)}: ${convertRule('upstream-vhost').reason}; left out`);
  }

  const prefix = read('x-forwarded-prefix', (v) => {
    const checked = checkPrefix(v);
    return checked.ok ? checkHeaderValue(checked.value) : checked;
  });

  const times = (['proxy-read-timeout', 'proxy-send-timeout'] as const).flatMap((key) => {
    const time = read(key, checkSeconds);
    if (time === undefined) return [];
    const duration = toDuration(time);
    if (duration === null) {
      report(full(key), `${show(time)} is longer than a Gateway API Duration (99999h); left out`);
      return [];
    }
    report(full(key), `converted to timeouts.backendRequest: ${TIMEOUT_DIFFERENCE}`);
    return [duration];
  });
  const timeout = times.length === 0 ? null : times.reduce((a, b) => (millis(b) > millis(a) ? b : a));

  const responseHeaders: { name: string; value: string }[] = [];
  const headersRef = read('custom-headers', (v) => {
    // `name` or `namespace/name`, as secretRef (annotations/auth.ts) reads one: `a/b/c` is refused, not read as `a/b`.
    const [first, second, ...rest] = v.split('/');
    const okNs = checkDnsLabel(second === undefined ? namespace : first);
    const okName = checkObjectName(second ?? first);
    return rest.length === 0 && okNs.ok && okName.ok
      ? { ok: true as const, value: { ns: okNs.value, name: okName.value } }
      : { ok: false as const, message: `${show(v)} is not a ConfigMap reference (namespace/name)` };
  });
  if (headersRef) {
    const map = configMap(headersRef.ns, headersRef.name);
    if (!map)
      report(full('custom-headers'), `ConfigMap ${headersRef.ns}/${headersRef.name} is not in the manifests; left out`);
    for (const [name, value] of Object.entries(map?.data ?? {}).sort(([a], [b]) => compare(a, b))) {
      const n = checkHeaderName(name);
      const v = checkHeaderValue(value);
      if (n.ok && v.ok) responseHeaders.push({ name: n.value, value: v.value });
      else
        report(
          full('custom-headers'),
          `ConfigMap ${headersRef.ns}/${headersRef.name} key ${show(name)}: ${n.ok ? (v as { message: string }).message : n.message}; header left out`,
        );
    }
  }

  const text = (key: string) => {
    const v = values.get(key);
    return v === undefined || v.trim() === '' ? undefined : v;
  };
  const cors = corsFilter(text, (key, reason) => report(full(key), reason));
  if (cors === null) {
    const enable = values.get('enable-cors');
    if (enable !== undefined && enable !== 'false' && enable !== 'true')
      report(full('enable-cors'), `${show(enable)} is not true or false; left out`);
    for (const key of CORS_KEYS.slice(1))
      if (values.has(key)) report(full(key), 'has no effect without enable-cors: "true"; left out');
  }

  let canarySettings: Settings['canary'] = null;
  if (canary) {
    // A `canary` value that is not a boolean still makes a canary (isCanary), one the model leaves out.
    read('canary', checkBool);
    const total = read('canary-weight-total', intIn(1, 1_000_000)) ?? 100;
    let weight = read('canary-weight', intIn(0, 1_000_000)) ?? null;
    if (weight !== null && weight > total) {
      invalid('canary-weight', `${weight} is above canary-weight-total ${total}`);
      weight = null;
    }
    const header = read('canary-by-header', checkHeaderName) ?? null;
    const headerValue = read('canary-by-header-value', (v) => {
      const checked = checkCanaryHeaderValue(v);
      return checked.ok ? checkHeaderValue(checked.value) : checked;
    });
    canarySettings = { leftOut: false, header, headerValue: headerValue ?? null, weight, total };
  } else {
    for (const key of ['canary-by-header', 'canary-by-header-value', 'canary-weight', 'canary-weight-total'])
      if (values.has(key)) report(full(key), 'has no effect without canary: "true"; left out');
  }

  return {
    rewriteTarget: read('rewrite-target', checkRewriteTarget) ?? null,
    useRegex: bool('use-regex') ?? false,
    appRoot: read('app-root', checkPath) ?? null,
    sslRedirect: bool('ssl-redirect'),
    forceSslRedirect: bool('force-ssl-redirect') ?? false,
    preserveTrailingSlash: bool('preserve-trailing-slash') ?? false,
    redirect,
    vhost,
    forwardedPrefix: prefix ?? null,
    responseHeaders,
    cors,
    timeout,
    sslPassthrough: bool('ssl-passthrough') ?? false,
    backendTls: canary ? null : readBackendTls(values, namespace, secret, report),
    clientCa: canary ? null : readClientCa(values, namespace, secret, report),
    canary: canarySettings && { ...canarySettings, leftOut: canaryLeftOut },
  };
}
