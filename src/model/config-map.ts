import type { GlobalConfig, Problem } from './nginx-model.js';
import type { ConfigMap } from './snapshot.js';
import {
  checkBool,
  checkFilePath,
  checkBuffers,
  checkErrorLogLevel,
  checkLogFormat,
  checkPositiveInt,
  checkSeconds,
  checkSize,
  checkSslProtocols,
  checkWorkerProcesses,
  type Checked,
} from './validate.js';

/** The default log format of ingress-nginx (`log-format-upstream`), less its Lua-only variables. */
export const DEFAULT_LOG_FORMAT =
  '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" ' +
  '"$http_user_agent" $request_length $request_time [$proxy_upstream_name] $upstream_addr ' +
  '$upstream_response_length $upstream_response_time $upstream_status $request_id';

/** defaultGlobalConfig is ingress-nginx's defaults for the keys this controller reads. */
export const defaultGlobalConfig: GlobalConfig = Object.freeze({
  workerProcesses: 'auto',
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
  sslRedirect: true,
  useForwardedHeaders: false,
  logFormatUpstream: DEFAULT_LOG_FORMAT,
  accessLogPath: 'logs/access.log',
});

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** ConfigKey is one ConfigMap key: its ingress-nginx name, validator and where it lands. */
export interface ConfigKey {
  readonly key: string;
  readonly doc: string;
  /** the GlobalConfig field it sets, when it sets one directly (docs show its default) */
  readonly field?: keyof GlobalConfig;
  readonly apply: (value: string, config: Mutable<GlobalConfig>) => Checked<unknown>;
}

function key<K extends keyof GlobalConfig>(
  name: string,
  field: K,
  check: (value: string) => Checked<GlobalConfig[K]>,
  doc: string,
): ConfigKey {
  return {
    key: name,
    doc,
    field,
    apply: (value, config) => {
      const checked = check(value);
      if (checked.ok) config[field] = checked.value;
      return checked;
    },
  };
}

const hashSize = (value: string) => checkPositiveInt(value, 1 << 20);

/** configKeys is the registry of supported ConfigMap keys; docs and the compatibility table come from it. */
export const configKeys: readonly ConfigKey[] = [
  key('worker-processes', 'workerProcesses', checkWorkerProcesses, 'nginx worker_processes: `auto` or a count'),
  key('error-log-level', 'errorLogLevel', checkErrorLogLevel, 'error_log level'),
  key('max-worker-connections', 'maxWorkerConnections', (v) => checkPositiveInt(v, 1 << 20), 'worker_connections'),
  key('client-header-buffer-size', 'clientHeaderBufferSize', checkSize, 'client_header_buffer_size'),
  key('large-client-header-buffers', 'largeClientHeaderBuffers', checkBuffers, 'large_client_header_buffers'),
  key('http2-max-field-size', 'http2MaxFieldSize', checkSize, 'http2_max_field_size (only with http2-max-header-size)'),
  key('http2-max-header-size', 'http2MaxHeaderSize', checkSize, 'http2_max_header_size (only with http2-max-field-size)'),
  key('server-name-hash-max-size', 'serverNameHashMaxSize', hashSize, 'server_names_hash_max_size; raised to fit the hosts'),
  key('server-name-hash-bucket-size', 'serverNameHashBucketSize', hashSize, 'server_names_hash_bucket_size; raised to fit the longest host'),
  key('map-hash-bucket-size', 'mapHashBucketSize', hashSize, 'map_hash_bucket_size'),
  key('proxy-body-size', 'proxyBodySize', checkSize, 'client_max_body_size'),
  key('proxy-connect-timeout', 'proxyConnectTimeout', checkSeconds, 'proxy_connect_timeout (seconds)'),
  key('proxy-read-timeout', 'proxyReadTimeout', checkSeconds, 'proxy_read_timeout (seconds)'),
  key('proxy-send-timeout', 'proxySendTimeout', checkSeconds, 'proxy_send_timeout (seconds)'),
  key('keep-alive', 'keepAlive', checkSeconds, 'keepalive_timeout (seconds)'),
  key('ssl-protocols', 'sslProtocols', checkSslProtocols, 'ssl_protocols'),
  key('ssl-redirect', 'sslRedirect', checkBool, 'redirect HTTP to HTTPS (308) for hosts with TLS'),
  key('use-forwarded-headers', 'useForwardedHeaders', checkBool, 'trust X-Forwarded-* from the client'),
  key('log-format-upstream', 'logFormatUpstream', checkLogFormat, 'access log format'),
  key('access-log-path', 'accessLogPath', checkFilePath, 'access log file; relative paths are under the nginx prefix'),
  {
    key: 'disable-access-log',
    doc: 'turn the access log off',
    apply: (value, config) => {
      const checked = checkBool(value);
      if (checked.ok && checked.value) config.accessLogPath = null;
      return checked;
    },
  },
];

const byKey = new Map(configKeys.map((k) => [k.key, k]));

/**
 * readConfigMap applies a ConfigMap's data over the defaults. A bad value is a problem and its
 * default stays; an unknown key is a problem too, so a typo does not pass silently.
 */
export function readConfigMap(configMap: ConfigMap | undefined): { config: GlobalConfig; problems: Problem[] } {
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
      problems.push(at(`data.${name}`, 'is not a key this controller supports; ignored'));
      continue;
    }
    if (typeof value !== 'string') {
      problems.push(at(`data.${name}`, 'must be a string'));
      continue;
    }
    const checked = entry.apply(value, config);
    if (!checked.ok) problems.push(at(`data.${name}`, `${checked.message}; keeping the default`));
  }
  if ((config.http2MaxFieldSize === null) !== (config.http2MaxHeaderSize === null)) {
    problems.push(at('data.http2-max-field-size', 'http2-max-field-size and http2-max-header-size take effect only together'));
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
