/** ingress-nginx's defaults for the ConfigMap keys this controller reads. */
import type { GlobalConfig } from '../nginx-model.js';

/** DEFAULT_SSL_CIPHERS is ingress-nginx's ssl-ciphers default. */
export const DEFAULT_SSL_CIPHERS =
  'ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:' +
  'ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:' +
  'ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384';

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
  enableModsecurity: false,
  enableOwaspModsecurityCrs: false,
  modsecuritySnippet: null,
  enableOpentelemetry: false,
  opentelemetryTrustIncomingSpan: true,
  opentelemetryOperationName: '',
  otlpCollectorHost: '',
  // ingress-nginx's 4317 is OTLP/gRPC; the controller exports OTLP/HTTP, whose port is 4318
  otlpCollectorPort: 4318,
  otelServiceName: 'nginx',
  otelSampler: 'AlwaysOff',
  otelSamplerRatio: 0.01,
  otelSamplerParentBased: false,
  otelMaxQueueSize: 2048,
  otelScheduleDelayMillis: 5000,
  otelMaxExportBatchSize: 512,
});
