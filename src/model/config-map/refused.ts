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
  {
    key: 'opentelemetry-config',
    reason: "there is no tracing module's TOML file: the otel-* and otlp-* keys configure the controller's exporter",
  },
  { key: 'use-geoip2', reason: 'GeoIP2 is not part of nginx here' },
  { key: 'global-auth-url', reason: 'a ConfigMap-wide auth-url is not implemented; use the auth-url annotation' },
  // nginx runs Lua here only as the controller's own (lua/ingress_actors: the balancer, certificates, Gateway API
  // routes, metrics), with --dynamic-backends; none of ingress-nginx's Lua or its extension points exist.
  {
    key: 'lua-shared-dicts',
    reason:
      "the controller's Lua has its own shared dicts (ia_config, ia_sticky, ia_metrics) of fixed sizes; " +
      "ingress-nginx's dicts, and extra ones, do not exist here",
  },
  {
    key: 'plugins',
    reason:
      "ingress-nginx's Lua plugins are not loaded: the only Lua nginx runs is the controller's own (balancer, " +
      'certificates, Gateway API routes, metrics)',
  },
];
