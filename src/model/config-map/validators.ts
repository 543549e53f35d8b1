/**
 * The validators of ConfigMap values that only ConfigMap keys use (the shared ones are in ../validate.ts). Each
 * accepts exactly what nginx (or ingress-nginx's reading of the key) accepts, so a valid value never fails `nginx -t`.
 */
import type { RiskLevel } from '../nginx-model.js';
import type { NginxModules } from '../machine-settings.js';
import { regexSubsetRefusal } from '../regex-path.js';
import { checkSnippetDirectives, type SnippetContext } from '../snippet-policy.js';
import { type Checked, checkDnsLabel, checkIp, checkPositiveInt, show } from '../validate.js';

/** RISK_LEVELS is ingress-nginx's risk scale, lowest first. */
export const RISK_LEVELS: readonly RiskLevel[] = ['Low', 'Medium', 'High', 'Critical'];

/** checkRiskLevel accepts Low, Medium, High or Critical, in any case, as ingress-nginx does. */
export function checkRiskLevel(value: unknown): Checked<RiskLevel> {
  const found = RISK_LEVELS.find(
    (level) => typeof value === 'string' && level.toLowerCase() === value.trim().toLowerCase(),
  );
  return found
    ? { ok: true, value: found }
    : { ok: false, message: `${show(value)} is not one of ${RISK_LEVELS.join(', ')}` };
}

/** checkStatusCode accepts an HTTP error status, 400 to 599 (limit-req-status-code, limit-conn-status-code). */
export function checkStatusCode(value: unknown): Checked<number> {
  const n = checkPositiveInt(value, 599);
  return n.ok && n.value >= 400 ? n : { ok: false, message: `${show(value)} is not an HTTP error status (400-599)` };
}

/** checkGzipLevel accepts a gzip_comp_level, 1 to 9. */
export function checkGzipLevel(value: unknown): Checked<number> {
  const n = checkPositiveInt(value, 9);
  return n.ok ? n : { ok: false, message: `${show(value)} is not a gzip level (1-9)` };
}

/** checkByteCount accepts a whole number of bytes, 0 included. */
export function checkByteCount(value: unknown): Checked<number> {
  if (value === '0') return { ok: true, value: 0 };
  const n = checkPositiveInt(value);
  return n.ok ? n : { ok: false, message: `${show(value)} is not a byte count` };
}

/** A MIME type as gzip_types takes it (`*` for any, or type/subtype with RFC 6838's characters). */
const MIME_TYPE = /^(\*|[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126})$/;

/** checkMimeTypes accepts MIME types separated by spaces or commas (gzip-types, brotli-types), or `*`. */
export function checkMimeTypes(value: unknown): Checked<string[]> {
  if (typeof value === 'string' && value.length > 4096) return { ok: false, message: 'is longer than 4096 characters' };
  const types = typeof value === 'string' ? value.split(/[ ,]+/).filter(Boolean) : [];
  const bad = types.find((t) => !MIME_TYPE.test(t));
  if (types.length === 0 || bad !== undefined)
    return { ok: false, message: `${show(bad ?? value)} is not a MIME type (type/subtype, or *)` };
  // nginx always compresses text/html once gzip is on, and warns when it is listed again; a list of text/html alone
  // is then empty, and the template writes no gzip_types at all (nginx's default: text/html).
  return { ok: true, value: [...new Set(types)].filter((t) => t.toLowerCase() !== 'text/html') };
}

/**
 * The fewest worker_connections accepted: nginx refuses fewer than its listening sockets (http, https, the Lua
 * control socket, …: "worker_connections are not enough"), and needs more than those to serve anyone.
 */
export const MIN_WORKER_CONNECTIONS = 16;

/** checkWorkerConnections accepts worker_connections from MIN_WORKER_CONNECTIONS to 2^20. */
export function checkWorkerConnections(value: unknown): Checked<number> {
  const n = checkPositiveInt(value, 1 << 20);
  return n.ok && n.value >= MIN_WORKER_CONNECTIONS
    ? n
    : { ok: false, message: `${show(value)} is not a whole number from ${MIN_WORKER_CONNECTIONS} to ${1 << 20}` };
}

/** checkCount accepts a whole number from 0 to max (0 switches the feature off). */
export function checkCount(value: unknown, max = 2 ** 31 - 1): Checked<number> {
  if (value === '0') return { ok: true, value: 0 };
  const n = checkPositiveInt(value, max);
  return n.ok ? n : { ok: false, message: `${show(value)} is not a whole number from 0 to ${max}` };
}

/** checkBrotliLevel accepts a brotli_comp_level, 0 to 11. */
export function checkBrotliLevel(value: unknown): Checked<number> {
  if (value === '0') return { ok: true, value: 0 };
  const n = checkPositiveInt(value, 11);
  return n.ok ? n : { ok: false, message: `${show(value)} is not a brotli level (0-11)` };
}

/** The largest gzip-disable pattern: one User-Agent regex is short. */
const MAX_GZIP_DISABLE = 256;

/**
 * checkGzipDisable accepts `msie6` (nginx's own mask) or one regular expression of the subset PCRE2 and JavaScript
 * read alike (src/model/regex-path.ts: linear to check, no named groups), which nginx matches case-insensitively
 * against the User-Agent.
 */
export function checkGzipDisable(value: unknown): Checked<string> {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_GZIP_DISABLE)
    return { ok: false, message: `is not msie6 or a regular expression of 1 to ${MAX_GZIP_DISABLE} characters` };
  if (value === 'msie6') return { ok: true, value };
  if (!/^[\x20-\x7e]+$/.test(value))
    return { ok: false, message: `${show(value)} holds a character other than printable ASCII` };
  if (/\(\?(?!:)/.test(value))
    return { ok: false, message: `${show(value)}: only the (?: group is allowed among (? constructs` };
  // A User-Agent holds spaces, which the path-minded subset does not list; a space is a literal in PCRE2 and
  // JavaScript alike (no (?x) can reach here), so it is checked as any other literal would be.
  const refused = regexSubsetRefusal(value.replace(/ /g, '_'));
  return refused === null ? { ok: true, value } : { ok: false, message: `${show(value)}: ${refused}` };
}

/** checkConfigMapRef accepts `namespace/name` of a ConfigMap (add-headers, proxy-set-headers). */
export function checkConfigMapRef(value: unknown): Checked<string> {
  const [namespace, name, ...rest] = typeof value === 'string' && value.length <= 317 ? value.split('/') : [];
  if (rest.length === 0 && checkDnsLabel(namespace).ok && checkDnsLabel(name).ok)
    return { ok: true, value: value as string };
  return { ok: false, message: `${show(value)} is not namespace/name of a ConfigMap` };
}

/** checkSnippet checks a ConfigMap snippet against the annotations' allow-list for its context. */
export const checkSnippet = (context: SnippetContext) => (value: string, modules: NginxModules) =>
  checkSnippetDirectives(value, context, { modules });

/**
 * checkLoadBalance accepts round_robin, or ewma (least_conn too): the Lua balancer's EWMA where nginx has Lua, nginx's
 * least_conn where it does not.
 */
export function checkLoadBalance(value: unknown): Checked<'round_robin' | 'least_conn'> {
  if (value === 'round_robin') return { ok: true, value };
  // EWMA is the Lua balancer's; without it least_conn is nginx's closest built-in (both favour the less loaded).
  if (value === 'ewma' || value === 'least_conn') return { ok: true, value: 'least_conn' };
  return { ok: false, message: `${show(value)} is not round_robin or ewma` };
}

/** checkOtelSampler accepts ingress-nginx's otel-sampler values: AlwaysOn, AlwaysOff, TraceIdRatioBased. */
export function checkOtelSampler(value: unknown): Checked<'AlwaysOn' | 'AlwaysOff' | 'TraceIdRatioBased'> {
  if (value === 'AlwaysOn' || value === 'AlwaysOff' || value === 'TraceIdRatioBased') return { ok: true, value };
  return { ok: false, message: `${show(value)} is not AlwaysOn, AlwaysOff or TraceIdRatioBased` };
}

/** checkRatio accepts a decimal from 0 to 1 (otel-sampler-ratio): digits, one optional point, no exponent. */
export function checkRatio(value: unknown): Checked<number> {
  if (typeof value === 'string' && value.length <= 20 && /^(?:0|1)?(?:\.\d{1,17})?$/.test(value) && value !== '.') {
    const n = Number(value);
    if (value !== '' && n >= 0 && n <= 1) return { ok: true, value: n };
  }
  return { ok: false, message: `${show(value)} is not a ratio from 0 to 1` };
}

/**
 * checkCollectorHost accepts where spans go (otlp-collector-host): an IP address, or a lower-case DNS name (a Service's
 * `name.namespace.svc`); '' exports nothing. The operator's ConfigMap names it; no request can.
 */
export function checkCollectorHost(value: unknown): Checked<string> {
  if (value === '') return { ok: true, value };
  const ip = checkIp(value);
  if (ip.ok) return { ok: true, value: ip.value.address };
  const labels = typeof value === 'string' && value.length <= 253 ? value.split('.') : [];
  if (labels.length > 0 && labels.every((label) => checkDnsLabel(label).ok))
    return { ok: true, value: value as string };
  return { ok: false, message: `${show(value)} is not an IP address or a DNS name` };
}

/** OPERATION_NAME_VARIABLES are the variables opentelemetry-operation-name may use, each replaced per span. */
export const OPERATION_NAME_VARIABLES = [
  '$request_method',
  '$host',
  '$uri',
  '$location_path',
  '$namespace',
  '$ingress_name',
  '$service_name',
] as const;

/** The longest opentelemetry-operation-name, before its variables are replaced. */
const MAX_OPERATION_NAME = 256;

/**
 * checkOperationName accepts a span name of printable ASCII where each `$` starts one of OPERATION_NAME_VARIABLES
 * (ingress-nginx's example `HTTP $request_method $service_name $uri` among them); no other nginx variable is read.
 */
export function checkOperationName(value: unknown): Checked<string> {
  if (typeof value !== 'string' || value.length > MAX_OPERATION_NAME || !/^[\x20-\x7e]*$/.test(value))
    return { ok: false, message: `is not printable ASCII of at most ${MAX_OPERATION_NAME} characters` };
  for (const m of value.matchAll(/\$[a-z_]*/g))
    if (!(OPERATION_NAME_VARIABLES as readonly string[]).includes(m[0]))
      return {
        ok: false,
        message: `${show(m[0])} is not one of the variables a span name may use (${OPERATION_NAME_VARIABLES.join(', ')})`,
      };
  return { ok: true, value };
}
