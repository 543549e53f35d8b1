/**
 * configKeys, the registry of supported ConfigMap keys: each key's ingress-nginx name, validator, the GlobalConfig
 * field it sets and its line of docs/configmap.md.
 */
import type { GlobalConfig } from '../nginx-model.js';
import type { NginxModules } from '../machine-settings.js';
import {
  checkAccessLogPath,
  checkBool,
  checkBuffers,
  checkCidrList,
  checkErrorLogLevel,
  checkHeaderName,
  checkLogFormat,
  checkOffset,
  checkPositiveInt,
  checkSeconds,
  checkSize,
  checkSslProtocols,
  checkWorkerProcesses,
  type Checked,
  show,
} from '../validate.js';
import { checkCiphers } from './ciphers.js';
import { checkModSecuritySnippet } from '../modsecurity-policy.js';
import {
  checkBrotliLevel,
  checkByteCount,
  checkConfigMapRef,
  checkCollectorHost,
  checkCount,
  checkGzipDisable,
  checkGzipLevel,
  checkLoadBalance,
  checkMimeTypes,
  checkOperationName,
  checkOtelSampler,
  checkRatio,
  checkRiskLevel,
  checkSnippet,
  checkStatusCode,
  checkWorkerConnections,
  MIN_WORKER_CONNECTIONS,
} from './validators.js';

/**
 * The largest proxy buffer nginx takes while proxy_max_temp_file_size keeps its 1024m default (it must hold one
 * buffer), as the proxy-buffer-size annotation.
 */
const MAX_PROXY_BUFFER = 1024n ** 3n;

/** The most idle backend connections per upstream: nginx allocates them all up front, per upstream block. */
const MAX_UPSTREAM_KEEPALIVE = 4096;

/** MutableGlobalConfig is a GlobalConfig being filled in by the keys of a ConfigMap. */
export type MutableGlobalConfig = { -readonly [K in keyof GlobalConfig]: GlobalConfig[K] };

/** ConfigKey is one ConfigMap key: its ingress-nginx name, validator and where it lands. */
export interface ConfigKey {
  readonly key: string;
  readonly doc: string;
  /** the GlobalConfig field it sets, when it sets one directly (docs show its default) */
  readonly field?: keyof GlobalConfig;
  /** `modules`: the optional modules this nginx has (the snippet keys allow their directives) */
  readonly apply: (value: string, config: MutableGlobalConfig, modules?: NginxModules) => Checked<unknown>;
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
  key(
    'enable-modsecurity',
    'enableModsecurity',
    checkBool,
    'ModSecurity in every Ingress location (an Ingress\'s enable-modsecurity "false" opts out); needs Debian\'s ' +
      'libnginx-mod-http-modsecurity (a problem and no WAF without it); DetectionOnly unless modsecurity-snippet says ' +
      '`SecRuleEngine On`',
  ),
  key(
    'enable-owasp-modsecurity-crs',
    'enableOwaspModsecurityCrs',
    checkBool,
    "the OWASP Core Rule Set wherever ModSecurity is on; needs Debian's modsecurity-crs; loaded once for all locations",
  ),
  key(
    'modsecurity-snippet',
    'modsecuritySnippet',
    (v) => checkModSecuritySnippet(v, 'config'),
    'ModSecurity directives for every location with ModSecurity, checked as the modsecurity-snippet annotation is ' +
      "(docs/annotations.md), its rule ids 300000-899999; not gated by allow-snippet-annotations (the ConfigMap is the operator's)",
  ),
  key(
    'enable-opentelemetry',
    'enableOpentelemetry',
    checkBool,
    'a server span for every request (OpenTelemetry), its W3C traceparent sent to the backend; needs the Lua balancer ' +
      '(--dynamic-backends); the enable-opentelemetry annotation overrides it per Ingress',
  ),
  key(
    'opentelemetry-trust-incoming-span',
    'opentelemetryTrustIncomingSpan',
    checkBool,
    "a valid incoming traceparent (and tracestate) is the span's parent; false starts a new trace (the annotation " +
      'overrides it per Ingress)',
  ),
  key(
    'opentelemetry-operation-name',
    'opentelemetryOperationName',
    checkOperationName,
    'the span name; may use $request_method, $host, $uri, $location_path, $namespace, $ingress_name and ' +
      "$service_name (no other variable); empty: the location's path",
  ),
  key(
    'otlp-collector-host',
    'otlpCollectorHost',
    checkCollectorHost,
    'the OTLP collector the controller exports spans to (an IP address or DNS name); empty: spans are dropped (counted)',
  ),
  key(
    'otlp-collector-port',
    'otlpCollectorPort',
    (v) => checkPositiveInt(v, 65535),
    "the collector's OTLP/HTTP port (protobuf, POST /v1/traces): 4318 here, where ingress-nginx's 4317 is OTLP/gRPC",
  ),
  key(
    'otel-service-name',
    'otelServiceName',
    (v) =>
      /^[\x20-\x7e]{1,128}$/.test(v)
        ? { ok: true, value: v }
        : { ok: false, message: 'is not 1 to 128 printable ASCII characters' },
    "the spans' resource service.name",
  ),
  key('otel-sampler', 'otelSampler', checkOtelSampler, 'AlwaysOn, AlwaysOff or TraceIdRatioBased (new traces)'),
  key('otel-sampler-ratio', 'otelSamplerRatio', checkRatio, "TraceIdRatioBased's share of new traces, 0 to 1"),
  key(
    'otel-sampler-parent-based',
    'otelSamplerParentBased',
    checkBool,
    "a trusted incoming traceparent's sampled flag decides; the sampler decides only for new traces",
  ),
  key(
    'otel-max-queuesize',
    'otelMaxQueueSize',
    (v) => checkPositiveInt(v, 65_536),
    'spans the controller holds for export at most (up to 65536); more are dropped and counted',
  ),
  key(
    'otel-schedule-delay-millis',
    'otelScheduleDelayMillis',
    (v) => checkPositiveInt(v, 3_600_000),
    'the longest a span waits to be exported with its batch (ms)',
  ),
  key(
    'otel-max-export-batch-size',
    'otelMaxExportBatchSize',
    (v) => checkPositiveInt(v, 1 << 16),
    'spans per OTLP request at most',
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
