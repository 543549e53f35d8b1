import { getCiphers } from 'node:tls';
import type { GlobalConfig, Problem, RiskLevel } from './nginx-model.js';
import type { NginxModules } from './machine-settings.js';
import { regexSubsetRefusal } from './regex-path.js';
import { checkSnippetDirectives, type SnippetContext } from './snippet-policy.js';
import type { ConfigMap } from './snapshot.js';
import {
  checkBool,
  checkCidrList,
  checkAccessLogPath,
  checkHeaderName,
  checkBuffers,
  checkDnsLabel,
  checkErrorLogLevel,
  checkLogFormat,
  checkPositiveInt,
  checkSeconds,
  checkOffset,
  checkSize,
  checkSslProtocols,
  checkWorkerProcesses,
  show,
  type Checked,
} from './validate.js';

/** DEFAULT_SSL_CIPHERS is ingress-nginx's ssl-ciphers default. */
export const DEFAULT_SSL_CIPHERS =
  'ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:' +
  'ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:' +
  'ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384';

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

/** checkCiphers accepts an OpenSSL cipher list: names, `:`, `!`, `+`, `-`, `@STRENGTH` and the like. */
export function checkCiphers(value: unknown): Checked<string> {
  if (typeof value !== 'string' || value.length > 2048 || !/^[A-Za-z0-9:+!@=_.-]{1,2048}$/.test(value)) {
    return { ok: false, message: `${show(value)} is not an OpenSSL cipher list (letters, digits and : + ! @ = _ . -)` };
  }
  // Every element must name something OpenSSL knows, and one must select: a list that matches no
  // cipher passes a character check but fails `nginx -t` ("no cipher match"), blocking every sync.
  let selects = false;
  for (const element of value.split(':')) {
    const negated = /^[!-]/.test(element);
    const body = element.replace(/^[!+-]/, '');
    if (/^@(STRENGTH|SECLEVEL=[0-5])$/.test(body)) continue;
    const unknown = body.split('+').find((part) => !CIPHER_ALIASES.has(part) && !KNOWN_CIPHERS.has(part.toLowerCase()));
    if (body === '' || unknown !== undefined) {
      return {
        ok: false,
        message: `${show(value)}: ${show(unknown ?? element)} is not an OpenSSL cipher or cipher alias`,
      };
    }
    const surelyMatches = body
      .split('+')
      .every((part) => SELECTING_ALIASES.has(part) || KNOWN_CIPHERS.has(part.toLowerCase()));
    if (!negated && !element.startsWith('+') && surelyMatches) selects = true;
  }
  return selects
    ? { ok: true, value }
    : { ok: false, message: `${show(value)} selects no cipher surely (add HIGH, DEFAULT or a cipher name)` };
}

/** OpenSSL's cipher-list aliases (ciphers(1)), which name groups rather than one cipher. */
const CIPHER_ALIASES = new Set(
  (
    'ALL DEFAULT COMPLEMENTOFDEFAULT COMPLEMENTOFALL HIGH MEDIUM LOW eNULL NULL aNULL kRSA aRSA RSA kDHr kDHd kDH ' +
    'kDHE kEDH DH DHE EDH ADH kEECDH kECDHE ECDH ECDHE EECDH AECDH aDSS DSS aECDSA ECDSA TLSv1.2 TLSv1.0 SSLv3 ' +
    'AES128 AES256 AES AESGCM AESCCM AESCCM8 ARIA128 ARIA256 ARIA CAMELLIA128 CAMELLIA256 CAMELLIA CHACHA20 ' +
    '3DES DES RC4 RC2 IDEA SEED MD5 SHA1 SHA SHA256 SHA384 PSK kPSK kECDHEPSK kDHEPSK kRSAPSK aPSK SUITEB128 ' +
    'SUITEB128ONLY SUITEB192 CBC kSRP SRP aSRP EXP EXPORT'
  ).split(' '),
);

/** Aliases that match ciphers in every OpenSSL 3 build (MEDIUM, RC4, EXPORT… may match none). */
const SELECTING_ALIASES = new Set(
  (
    'ALL DEFAULT HIGH AES128 AES256 AES AESGCM CHACHA20 ECDHE EECDH kEECDH kECDHE ECDH aECDSA ECDSA RSA kRSA aRSA ' +
    'DHE EDH kDHE kEDH DH SHA SHA1 SHA256 SHA384 TLSv1.2 TLSv1.0 CAMELLIA ARIA'
  ).split(' '),
);

/** The ciphers this build of OpenSSL offers (a constant table: reading it is no I/O). */
const KNOWN_CIPHERS = new Set(getCiphers());

function checkStatusCode(value: unknown): Checked<number> {
  const n = checkPositiveInt(value, 599);
  return n.ok && n.value >= 400 ? n : { ok: false, message: `${show(value)} is not an HTTP error status (400-599)` };
}

function checkGzipLevel(value: unknown): Checked<number> {
  const n = checkPositiveInt(value, 9);
  return n.ok ? n : { ok: false, message: `${show(value)} is not a gzip level (1-9)` };
}

function checkByteCount(value: unknown): Checked<number> {
  if (value === '0') return { ok: true, value: 0 };
  const n = checkPositiveInt(value);
  return n.ok ? n : { ok: false, message: `${show(value)} is not a byte count` };
}

/** A MIME type as gzip_types takes it (`*` for any, or type/subtype with RFC 6838's characters). */
const MIME_TYPE = /^(\*|[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126})$/;

function checkMimeTypes(value: unknown): Checked<string[]> {
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
 * The largest proxy buffer nginx takes while proxy_max_temp_file_size keeps its 1024m default (it must hold one
 * buffer), as the proxy-buffer-size annotation.
 */
const MAX_PROXY_BUFFER = 1024n ** 3n;

/**
 * The fewest worker_connections accepted: nginx refuses fewer than its listening sockets (http, https, the Lua
 * control socket, …: "worker_connections are not enough"), and needs more than those to serve anyone.
 */
const MIN_WORKER_CONNECTIONS = 16;

function checkWorkerConnections(value: unknown): Checked<number> {
  const n = checkPositiveInt(value, 1 << 20);
  return n.ok && n.value >= MIN_WORKER_CONNECTIONS
    ? n
    : { ok: false, message: `${show(value)} is not a whole number from ${MIN_WORKER_CONNECTIONS} to ${1 << 20}` };
}

/** The most idle backend connections per upstream: nginx allocates them all up front, per upstream block. */
const MAX_UPSTREAM_KEEPALIVE = 4096;

/** checkCount accepts a whole number from 0 to max (0 switches the feature off). */
function checkCount(value: unknown, max = 2 ** 31 - 1): Checked<number> {
  if (value === '0') return { ok: true, value: 0 };
  const n = checkPositiveInt(value, max);
  return n.ok ? n : { ok: false, message: `${show(value)} is not a whole number from 0 to ${max}` };
}

function checkBrotliLevel(value: unknown): Checked<number> {
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
function checkGzipDisable(value: unknown): Checked<string> {
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
function checkConfigMapRef(value: unknown): Checked<string> {
  const [namespace, name, ...rest] = typeof value === 'string' && value.length <= 317 ? value.split('/') : [];
  if (rest.length === 0 && checkDnsLabel(namespace).ok && checkDnsLabel(name).ok)
    return { ok: true, value: value as string };
  return { ok: false, message: `${show(value)} is not namespace/name of a ConfigMap` };
}

/** A ConfigMap snippet, checked against the annotations' allow-list for its context. */
const checkSnippet = (context: SnippetContext) => (value: string, modules: NginxModules) =>
  checkSnippetDirectives(value, context, { modules });

function checkLoadBalance(value: unknown): Checked<'round_robin' | 'least_conn'> {
  if (value === 'round_robin') return { ok: true, value };
  // EWMA is the Lua balancer's; without it least_conn is nginx's closest built-in (both favour the less loaded).
  if (value === 'ewma' || value === 'least_conn') return { ok: true, value: 'least_conn' };
  return { ok: false, message: `${show(value)} is not round_robin or ewma` };
}

/** ingress-nginx's gzip-types default. */
const DEFAULT_GZIP_TYPES: readonly string[] = Object.freeze(
  (
    'application/atom+xml application/javascript application/x-javascript application/json application/rss+xml ' +
    'application/vnd.ms-fontobject application/x-font-ttf application/x-web-app-manifest+json application/xhtml+xml ' +
    'application/xml font/opentype image/svg+xml image/x-icon text/css text/javascript text/plain text/x-component'
  ).split(' '),
);

/** ingress-nginx's brotli-types default. */
const DEFAULT_BROTLI_TYPES: readonly string[] = Object.freeze(['application/xml+rss', ...DEFAULT_GZIP_TYPES]);

/**
 * The default log format of ingress-nginx (`log-format-upstream`, its `upstreaminfo`), as it is: nginx.conf defines
 * its $proxy_upstream_name, $proxy_alternative_upstream_name and $req_id.
 */
export const DEFAULT_LOG_FORMAT =
  '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" ' +
  '"$http_user_agent" $request_length $request_time [$proxy_upstream_name] [$proxy_alternative_upstream_name] ' +
  '$upstream_addr $upstream_response_length $upstream_response_time $upstream_status $req_id';

/** defaultGlobalConfig is ingress-nginx's defaults for the keys this controller reads. */
export const defaultGlobalConfig: GlobalConfig = Object.freeze({
  workerProcesses: 'auto',
  workerShutdownTimeout: '240s',
  errorLogLevel: 'notice',
  maxWorkerConnections: 16384,
  clientHeaderBufferSize: '1k',
  largeClientHeaderBuffers: { number: 4, size: '8k' },
  http2MaxFieldSize: null,
  http2MaxHeaderSize: null,
  serverNameHashMaxSize: 1024,
  serverNameHashBucketSize: 64,
  mapHashBucketSize: 64,
  proxyBodySize: '1m',
  proxyConnectTimeout: '5s',
  proxyReadTimeout: '60s',
  proxySendTimeout: '60s',
  keepAlive: '75s',
  sslProtocols: ['TLSv1.2', 'TLSv1.3'],
  sslCiphers: DEFAULT_SSL_CIPHERS,
  sslRedirect: true,
  forceSslRedirect: false,
  hsts: true,
  hstsMaxAge: 31536000,
  hstsIncludeSubdomains: true,
  hstsPreload: false,
  allowSnippetAnnotations: false,
  annotationsRiskLevel: 'High',
  allowCrossNamespaceResources: false,
  limitReqStatusCode: 503,
  limitConnStatusCode: 503,
  loadBalance: 'round_robin',
  useForwardedHeaders: false,
  enableRealIp: false,
  useProxyProtocol: false,
  useGzip: false,
  gzipLevel: 1,
  gzipMinLength: 256,
  gzipTypes: DEFAULT_GZIP_TYPES,
  forwardedForHeader: 'X-Forwarded-For',
  // ingress-nginx's default: every peer may name the client, once forwarded headers are trusted.
  proxyRealIpCidr: ['0.0.0.0/0'],
  logFormatUpstream: DEFAULT_LOG_FORMAT,
  logFormatEscapeJson: false,
  logFormatEscapeNone: false,
  // The pod's log, as ingress-nginx's /var/log/nginx/access.log (a link to it): nothing in the config folder grows.
  accessLogPath: '/dev/stdout',
  httpAccessLogPath: null,
  showServerTokens: false,
  keepAliveRequests: 1000,
  upstreamKeepaliveConnections: 320,
  upstreamKeepaliveTime: '1h',
  upstreamKeepaliveTimeout: '60s',
  upstreamKeepaliveRequests: 10000,
  proxyBufferSize: '4k',
  proxyBuffersNumber: 4,
  gzipDisable: null,
  sslSessionTickets: false,
  enableBrotli: false,
  brotliLevel: 4,
  brotliMinLength: 20,
  brotliTypes: DEFAULT_BROTLI_TYPES,
  addHeaders: null,
  proxySetHeaders: null,
  serverSnippet: null,
  httpSnippet: null,
});

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** ConfigKey is one ConfigMap key: its ingress-nginx name, validator and where it lands. */
export interface ConfigKey {
  readonly key: string;
  readonly doc: string;
  /** the GlobalConfig field it sets, when it sets one directly (docs show its default) */
  readonly field?: keyof GlobalConfig;
  /** `modules`: the optional modules this nginx has (the snippet keys allow their directives) */
  readonly apply: (value: string, config: Mutable<GlobalConfig>, modules?: NginxModules) => Checked<unknown>;
}

function key<K extends keyof GlobalConfig>(
  name: string,
  field: K,
  check: (value: string, modules: NginxModules) => Checked<GlobalConfig[K]>,
  doc: string,
): ConfigKey {
  return {
    key: name,
    doc,
    field,
    apply: (value, config, modules = {}) => {
      const checked = check(value, modules);
      if (checked.ok) config[field] = checked.value;
      return checked;
    },
  };
}

const hashSize = (value: string) => checkPositiveInt(value, 1 << 20);
/** ngx_hash_init refuses a bucket over 65536 less a cache line (64 bytes): "too large map_hash_bucket_size". */
const bucketSize = (value: string) => checkPositiveInt(value, 65536 - 64);

/** configKeys is the registry of supported ConfigMap keys; docs and the compatibility table come from it. */
export const configKeys: readonly ConfigKey[] = [
  key('worker-processes', 'workerProcesses', checkWorkerProcesses, 'nginx worker_processes: `auto` or a count'),
  key(
    'worker-shutdown-timeout',
    'workerShutdownTimeout',
    checkSeconds,
    'worker_shutdown_timeout: old workers end their connections this long after a reload (seconds)',
  ),
  key('error-log-level', 'errorLogLevel', checkErrorLogLevel, 'error_log level'),
  key(
    'max-worker-connections',
    'maxWorkerConnections',
    checkWorkerConnections,
    `worker_connections (${MIN_WORKER_CONNECTIONS} or more)`,
  ),
  key(
    'client-header-buffer-size',
    'clientHeaderBufferSize',
    (v) => checkSize(v),
    'client_header_buffer_size (bytes, k or m)',
  ),
  key('large-client-header-buffers', 'largeClientHeaderBuffers', checkBuffers, 'large_client_header_buffers'),
  key(
    'http2-max-field-size',
    'http2MaxFieldSize',
    (v) => checkSize(v),
    'http2_max_field_size (only with http2-max-header-size)',
  ),
  key(
    'http2-max-header-size',
    'http2MaxHeaderSize',
    (v) => checkSize(v),
    'http2_max_header_size (only with http2-max-field-size)',
  ),
  key(
    'server-name-hash-max-size',
    'serverNameHashMaxSize',
    hashSize,
    'server_names_hash_max_size; raised to fit the hosts',
  ),
  key(
    'server-name-hash-bucket-size',
    'serverNameHashBucketSize',
    bucketSize,
    'server_names_hash_bucket_size; raised to fit the longest host',
  ),
  key('map-hash-bucket-size', 'mapHashBucketSize', bucketSize, 'map_hash_bucket_size'),
  key('proxy-body-size', 'proxyBodySize', checkOffset, 'client_max_body_size (k, m or g; 0: no limit)'),
  key('proxy-connect-timeout', 'proxyConnectTimeout', checkSeconds, 'proxy_connect_timeout (seconds)'),
  key('proxy-read-timeout', 'proxyReadTimeout', checkSeconds, 'proxy_read_timeout (seconds)'),
  key('proxy-send-timeout', 'proxySendTimeout', checkSeconds, 'proxy_send_timeout (seconds)'),
  key('keep-alive', 'keepAlive', checkSeconds, 'keepalive_timeout (seconds)'),
  key('ssl-protocols', 'sslProtocols', checkSslProtocols, 'ssl_protocols'),
  key('ssl-ciphers', 'sslCiphers', checkCiphers, 'ssl_ciphers (TLS 1.2 and below)'),
  key('ssl-redirect', 'sslRedirect', checkBool, 'redirect HTTP to HTTPS (308) for hosts with TLS'),
  key('force-ssl-redirect', 'forceSslRedirect', checkBool, 'redirect HTTP to HTTPS (308) even for hosts without TLS'),
  key(
    'hsts',
    'hsts',
    checkBool,
    "send Strict-Transport-Security on HTTPS responses of hosts with TLS, in place of the backend's own",
  ),
  key(
    'hsts-max-age',
    'hstsMaxAge',
    (v) => (v === '0' ? { ok: true, value: 0 } : checkPositiveInt(v)),
    'HSTS max-age (seconds)',
  ),
  key('hsts-include-subdomains', 'hstsIncludeSubdomains', checkBool, 'HSTS includeSubDomains'),
  key('hsts-preload', 'hstsPreload', checkBool, 'HSTS preload'),
  key(
    'allow-snippet-annotations',
    'allowSnippetAnnotations',
    checkBool,
    'accept the configuration-snippet and server-snippet annotations (still checked against the snippet ' +
      "allow-list); the ConfigMap's own server-snippet and http-snippet do not need it",
  ),
  key(
    'annotations-risk-level',
    'annotationsRiskLevel',
    checkRiskLevel,
    'highest annotation risk accepted (Low, Medium, High, Critical); riskier annotations leave their Ingress out',
  ),
  key(
    'allow-cross-namespace-resources',
    'allowCrossNamespaceResources',
    checkBool,
    'let auth-secret name a Secret in another namespace',
  ),
  key('limit-req-status-code', 'limitReqStatusCode', checkStatusCode, 'status for requests over limit-rps / limit-rpm'),
  key(
    'limit-conn-status-code',
    'limitConnStatusCode',
    checkStatusCode,
    'status for connections over limit-connections',
  ),
  key('load-balance', 'loadBalance', checkLoadBalance, 'round_robin, or ewma (least_conn without the Lua balancer)'),
  key(
    'use-forwarded-headers',
    'useForwardedHeaders',
    checkBool,
    'trust X-Forwarded-Proto, -Port and -Host (the first of a list) from the client; the client address comes from ' +
      'forwarded-for-header',
  ),
  key(
    'enable-real-ip',
    'enableRealIp',
    checkBool,
    'take the client address from forwarded-for-header without trusting the other X-Forwarded-* headers',
  ),
  key(
    'use-proxy-protocol',
    'useProxyProtocol',
    checkBool,
    'expect the PROXY protocol on both ports; the client address comes from it, trusted from proxy-real-ip-cidr',
  ),
  key(
    'forwarded-for-header',
    'forwardedForHeader',
    checkHeaderName,
    'the header naming the client address (real_ip_header)',
  ),
  key(
    'proxy-real-ip-cidr',
    'proxyRealIpCidr',
    checkCidrList,
    'the proxies trusted to name the client address (set_real_ip_from), comma-separated',
  ),
  key('use-gzip', 'useGzip', checkBool, 'compress answers with gzip (gzip_proxied any, gzip_vary on)'),
  key('gzip-level', 'gzipLevel', checkGzipLevel, 'gzip_comp_level (1-9)'),
  key('gzip-min-length', 'gzipMinLength', checkByteCount, 'gzip_min_length (bytes)'),
  key('gzip-types', 'gzipTypes', checkMimeTypes, 'gzip_types: space-separated MIME types, or *'),
  key(
    'log-format-upstream',
    'logFormatUpstream',
    checkLogFormat,
    "access log format; its variables must be nginx's own or nginx.conf's ($proxy_upstream_name, and " +
      "ingress-nginx's $req_id and $proxy_alternative_upstream_name, always empty here): nginx refuses an unknown one",
  ),
  key(
    'log-format-escape-json',
    'logFormatEscapeJson',
    checkBool,
    "escape the access log's variables for JSON strings (`escape=json`), for a JSON log-format-upstream",
  ),
  key(
    'log-format-escape-none',
    'logFormatEscapeNone',
    checkBool,
    'escape nothing in the access log (`escape=none`); wins over log-format-escape-json',
  ),
  key(
    'access-log-path',
    'accessLogPath',
    checkAccessLogPath,
    "access log: `/dev/stdout` (the default: the controller's stdout, the pod's `kubectl logs`; " +
      "`/var/log/nginx/access.log`, ingress-nginx's default and a link to it there, means the same), or a file " +
      'right in `logs/` of the config folder, which nothing rotates',
  ),
  key(
    'http-access-log-path',
    'httpAccessLogPath',
    checkAccessLogPath,
    "the http block's access log instead of access-log-path (there is no stream access log here); the same places",
  ),
  key(
    'server-tokens',
    'showServerTokens',
    checkBool,
    'server_tokens: the nginx version in the Server header and error pages; off sends `Server: nginx` (ingress-nginx ' +
      'drops the header)',
  ),
  key(
    'keep-alive-requests',
    'keepAliveRequests',
    (v) => checkCount(v),
    'keepalive_requests: requests per client keep-alive connection',
  ),
  key(
    'upstream-keepalive-connections',
    'upstreamKeepaliveConnections',
    // nginx allocates the cache (about 150 bytes a connection) for every upstream block when it reads the config.
    (v) => checkCount(v, MAX_UPSTREAM_KEEPALIVE),
    `keepalive of each upstream: idle connections to backends kept per worker (0-${MAX_UPSTREAM_KEEPALIVE}); 0 ` +
      'turns upstream keep-alive off',
  ),
  key(
    'upstream-keepalive-time',
    'upstreamKeepaliveTime',
    checkSeconds,
    'keepalive_time of each upstream: how long one backend connection may be reused',
  ),
  key(
    'upstream-keepalive-timeout',
    'upstreamKeepaliveTimeout',
    checkSeconds,
    'keepalive_timeout of each upstream: how long an idle backend connection stays open (seconds)',
  ),
  key(
    'upstream-keepalive-requests',
    'upstreamKeepaliveRequests',
    (v) => checkPositiveInt(v),
    'keepalive_requests of each upstream: requests per backend connection',
  ),
  key(
    'proxy-buffer-size',
    'proxyBufferSize',
    (v) => checkSize(v, 1n, MAX_PROXY_BUFFER),
    'proxy_buffer_size, and the size of proxy_buffers (nginx wants them to agree): 1 byte to 1024m',
  ),
  key(
    'proxy-buffers-number',
    'proxyBuffersNumber',
    (v) => {
      // 3 at least: nginx wants the busy buffers (twice the size) below all buffers but one.
      const n = checkPositiveInt(v, 1024);
      return n.ok && n.value >= 3 ? n : { ok: false, message: `${show(v)} is not a whole number from 3 to 1024` };
    },
    'the number of proxy_buffers (3-1024)',
  ),
  key(
    'gzip-disable',
    'gzipDisable',
    checkGzipDisable,
    'gzip_disable: `msie6`, or one User-Agent regular expression (case-insensitive) of the subset PCRE2 and ' +
      'JavaScript read alike, no named groups',
  ),
  key('ssl-session-tickets', 'sslSessionTickets', checkBool, 'ssl_session_tickets: TLS session resumption by tickets'),
  key(
    'enable-brotli',
    'enableBrotli',
    checkBool,
    "compress answers with brotli; needs Debian's libnginx-mod-http-brotli-filter (a problem and no brotli without it)",
  ),
  key('brotli-level', 'brotliLevel', checkBrotliLevel, 'brotli_comp_level (0-11)'),
  key('brotli-min-length', 'brotliMinLength', (v) => checkCount(v), 'brotli_min_length (bytes)'),
  key('brotli-types', 'brotliTypes', checkMimeTypes, 'brotli_types: space-separated MIME types, or *'),
  key(
    'add-headers',
    'addHeaders',
    checkConfigMapRef,
    'namespace/name of a ConfigMap (any namespace: the controller watches it by name) whose data are response headers for every ' +
      "answer (`more_set_headers`; needs Debian's libnginx-mod-http-headers-more-filter); names of letters, digits " +
      "and '-', values of printable ASCII with the snippets' variables only; a bad entry is left out with a problem",
  ),
  key(
    'proxy-set-headers',
    'proxySetHeaders',
    checkConfigMapRef,
    'namespace/name of a ConfigMap (any namespace: the controller watches it by name) whose data are request headers for the ' +
      'backends (`proxy_set_header`), checked as add-headers; a header the controller sets itself (Host, ' +
      'X-Forwarded-*, …) is left out with a problem',
  ),
  key(
    'server-snippet',
    'serverSnippet',
    checkSnippet('server'),
    'directives in every server block, checked as the server-snippet annotation is: only its allow-list ' +
      '(docs/annotations.md: add_header, without session, redirect or framing headers; listed variables only); ' +
      "not gated by allow-snippet-annotations (the ConfigMap is the operator's); a refused snippet is left out whole",
  ),
  key(
    'http-snippet',
    'httpSnippet',
    checkSnippet('server'),
    'directives in the http block: the same allow-list as server-snippet; nginx passes an http-level add_header only ' +
      'to servers and locations that add no header of their own',
  ),
  {
    key: 'disable-access-log',
    doc: 'turn the access log off',
    apply: (value, config) => {
      const checked = checkBool(value);
      if (checked.ok && checked.value) config.accessLogPath = null;
      return checked;
    },
  },
  {
    key: 'disable-http-access-log',
    doc: "turn the http block's access log off (the only one here)",
    apply: (value, config) => {
      const checked = checkBool(value);
      if (checked.ok && checked.value) config.accessLogPath = null;
      return checked;
    },
  },
];

/**
 * refusedConfigKeys are ingress-nginx ConfigMap keys this controller does not implement, with why;
 * a ConfigMap naming one gets that reason in its problem. Keys in neither list are reported as unknown.
 */
export const refusedConfigKeys: readonly { readonly key: string; readonly reason: string }[] = [
  ...['main-snippet', 'location-snippet', 'stream-snippet'].map((key) => ({
    key,
    reason: 'only server-snippet and http-snippet are supported, under the snippet allow-list',
  })),
  {
    key: 'annotation-value-word-blocklist',
    reason:
      'snippets are always checked against a fixed allow-list ' +
      'of directives; other annotations have allow-list validators',
  },
  { key: 'custom-http-errors', reason: 'only the custom-http-errors annotation is supported' },
  {
    key: 'error-log-path',
    reason: "nginx's error log always goes to the controller's stderr, the pod's log (see error-log-level)",
  },
  ...['stream-access-log-path', 'disable-stream-access-log', 'log-format-stream'].map((key) => ({
    key,
    reason: 'there is no stream access log (the http access log is access-log-path)',
  })),
  ...['enable-syslog', 'syslog-host', 'syslog-port'].map((key) => ({
    key,
    reason: "syslog is not implemented: the logs are the pod's stdout (access log) and stderr",
  })),
  { key: 'access-log-params', reason: "access_log's buffer and flush parameters are not implemented" },
  { key: 'whitelist-source-range', reason: 'only the allowlist-source-range annotation is supported' },
  { key: 'denylist-source-range', reason: 'only the denylist-source-range annotation is supported' },
  { key: 'enable-modsecurity', reason: 'ModSecurity is not part of nginx here' },
  { key: 'enable-opentelemetry', reason: 'OpenTelemetry is not part of nginx here' },
  { key: 'use-geoip2', reason: 'GeoIP2 is not part of nginx here' },
  { key: 'global-auth-url', reason: 'a ConfigMap-wide auth-url is not implemented; use the auth-url annotation' },
  { key: 'lua-shared-dicts', reason: 'there is no Lua' },
  { key: 'plugins', reason: 'there is no Lua' },
];

const byKey = new Map(configKeys.map((k) => [k.key, k]));
const refusedByKey = new Map(refusedConfigKeys.map((k) => [k.key, k.reason]));

/**
 * readConfigMap applies a ConfigMap's data over the defaults. A bad value is a problem and its
 * default stays; an unknown key is a problem too, so a typo does not pass silently.
 */
export function readConfigMap(
  configMap: ConfigMap | undefined,
  modules: NginxModules = {},
): { config: GlobalConfig; problems: Problem[] } {
  const config: Mutable<GlobalConfig> = { ...defaultGlobalConfig };
  const problems: Problem[] = [];
  if (!configMap) return { config, problems };
  const at = (field: string, message: string): Problem => ({
    kind: 'ConfigMap',
    namespace: configMap.metadata?.namespace ?? '',
    name: configMap.metadata?.name ?? '',
    field,
    message,
  });
  const data = configMap.data ?? {};
  for (const name of Object.keys(data).sort()) {
    const entry = byKey.get(name);
    const value = data[name];
    if (!entry) {
      const reason = refusedByKey.get(name);
      problems.push(
        at(
          `data.${name}`,
          reason ? `is not supported (${reason}); ignored` : 'is not a key this controller supports; ignored',
        ),
      );
      continue;
    }
    if (typeof value !== 'string') {
      problems.push(at(`data.${name}`, 'must be a string'));
      continue;
    }
    const checked = entry.apply(value, config, modules);
    if (!checked.ok) problems.push(at(`data.${name}`, `${checked.message}; keeping the default`));
  }
  if ((config.http2MaxFieldSize === null) !== (config.http2MaxHeaderSize === null)) {
    problems.push(
      at('data.http2-max-field-size', 'http2-max-field-size and http2-max-header-size take effect only together'),
    );
    config.http2MaxFieldSize = null;
    config.http2MaxHeaderSize = null;
  }
  return { config, problems };
}

function nextPowerOf2(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
}

/**
 * fitServerNameHash raises the server_names hash sizes to fit the hosts, as ingress-nginx does
 * (nginx cannot resize them itself and refuses to start instead).
 */
export function fitServerNameHash(config: GlobalConfig, serverNames: readonly string[]): GlobalConfig {
  const wordSize = 8;
  const longest = Math.max(0, ...serverNames.map((name) => name.length));
  const aligned = (longest + 2 + wordSize - 1) & ~(wordSize - 1);
  const bucket = nextPowerOf2(2 * wordSize + aligned);
  const total = nextPowerOf2(serverNames.reduce((sum, name) => sum + name.length, 0));
  return {
    ...config,
    serverNameHashBucketSize: Math.max(config.serverNameHashBucketSize, bucket),
    serverNameHashMaxSize: Math.max(config.serverNameHashMaxSize, total),
  };
}
