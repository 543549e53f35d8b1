/**
 * Every ConfigMap key, fed the values ingress-nginx documents for it (its configmap.md and the
 * defaults of its config.go) and edge values (`*`, `text/html`, 0, empty, …), renders a config a
 * real `nginx -t` accepts: a value a validator passes must never block every later change. Each
 * value is either taken (no problem on its key) or refused (a problem naming the key, and the
 * default stays); nothing in between. A key in the registry without a table entry fails the test.
 *
 * Keys that do not interact share one config: round i sets every key to its i-th value; keys that
 * only render under a switch (gzip-*, brotli-*, access-log-path) get the switch on, and the switch's own
 * value of that round is tried alone. Both ways backends reach nginx are rendered: endpoints in nginx.conf,
 * and the Lua balancer's upstream.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions, type BuildOptions } from '../../src/model/build-types.js';
import { configKeys } from '../../src/model/config-map/registry.js';
import { checkBool, LOG_VARIABLES } from '../../src/model/validate.js';
import type { LuaSettings, NginxModules } from '../../src/model/machine-settings.js';
import type { Snapshot } from '../../src/model/snapshot.js';
import { nginxBinary, testConfig } from '../../src/nginx/binary.js';
import { writeConfigSet } from '../../src/nginx/files.js';
import { LUA_FOLDER } from '../../src/nginx/lua.js';
import { findModules, modulesPath } from '../../src/nginx/modules.js';
import { loadTemplate } from '../../src/render/load.js';
import { render } from '../../src/render/render.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';

/** A value the key takes, or `{ refused }`: one its validator turns down with a problem. */
type Value = string | { readonly refused: string };
const no = (refused: string): Value => ({ refused });

const INGRESS_NGINX_LOG_FORMAT =
  '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" ' +
  '"$http_user_agent" $request_length $request_time [$proxy_upstream_name] [$proxy_alternative_upstream_name] ' +
  '$upstream_addr $upstream_response_length $upstream_response_time $upstream_status $req_id';
/** configmap.md's JSON example, as YAML folds it onto one line. */
const JSON_LOG_FORMAT =
  '{"time": "$time_iso8601", "remote_addr": "$proxy_protocol_addr", "x_forwarded_for": ' +
  '"$proxy_add_x_forwarded_for", "request_id": "$req_id", "remote_user": "$remote_user", "bytes_sent": ' +
  '$bytes_sent, "request_time": $request_time, "status": $status, "vhost": "$host", "request_proto": ' +
  '"$server_protocol", "path": "$uri", "request_query": "$args", "request_length": $request_length, ' +
  '"method": "$request_method", "http_referrer": "$http_referer", "http_user_agent": "$http_user_agent" }';
const INGRESS_NGINX_GZIP_TYPES =
  'application/atom+xml application/javascript application/x-javascript application/json application/rss+xml ' +
  'application/vnd.ms-fontobject application/x-font-ttf application/x-web-app-manifest+json application/xhtml+xml ' +
  'application/xml font/opentype image/svg+xml image/x-icon text/css text/javascript text/plain text/x-component';
const CIPHERS =
  'ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:' +
  'ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:' +
  'DHE-RSA-AES256-GCM-SHA384:DHE-RSA-AES128-GCM-SHA256';
const BOOL: readonly Value[] = ['true', 'false', 'True', '0', no(''), no('yes')];

/** The table: every key of the registry, its documented values and default first, then edge values. */
const VALUES: Readonly<Record<string, readonly Value[]>> = {
  'worker-processes': ['auto', '1', '2', '1024', no('0'), no(''), no('max')],
  'worker-shutdown-timeout': ['240s', '10', '0', '1h', no(''), no('-1s'), no('soon')],
  'error-log-level': ['notice', 'debug', 'info', 'warn', 'error', 'crit', 'alert', 'emerg', no(''), no('verbose')],
  'max-worker-connections': ['16384', '16', '65536', '1048576', no('1'), no('0'), no(''), no('-1')],
  'client-header-buffer-size': ['1k', '512', '64k', '1m', no('0'), no(''), no('1g')],
  'large-client-header-buffers': ['4 8k', '2 1k', '8 16k', '4 512', no('4 511'), no(''), no('0 8k'), no('8k')],
  'http2-max-field-size': ['4k', '8k', '16k', '1', '64k', '32k', no(''), no('0')],
  'http2-max-header-size': ['16k', '32k', '64k', '1', '1m', '32k', no(''), no('0')],
  'server-name-hash-max-size': ['1024', '512', '4096', '1', no('0'), no('')],
  'server-name-hash-bucket-size': ['64', '32', '128', '256', no('0'), no(''), no('65473')],
  'map-hash-bucket-size': ['64', '32', '128', '65472', no('0'), no('')],
  'proxy-body-size': ['1m', '0', '8m', '100k', '1g', '1024', no(''), no('1t'), no('-1')],
  'proxy-connect-timeout': ['5', '5s', '75', '500ms', '0', no(''), no('5 s')],
  'proxy-read-timeout': ['60', '60s', '3600', '1d', '0', no(''), no('x')],
  'proxy-send-timeout': ['60', '60s', '3600', '2m', '0', no('')],
  'keep-alive': ['75', '75s', '0', '1h', no(''), no('-1')],
  'ssl-protocols': ['TLSv1.2 TLSv1.3', 'TLSv1.3', 'TLSv1.2', 'TLSv1 TLSv1.1 TLSv1.2 TLSv1.3', no(''), no('TLSv2')],
  'ssl-ciphers': [CIPHERS, 'HIGH:!aNULL:!MD5', 'DEFAULT', 'ALL', no(''), no('NOPE'), no('!ALL')],
  'ssl-redirect': BOOL,
  'force-ssl-redirect': BOOL,
  hsts: BOOL,
  'hsts-max-age': ['31536000', '0', '63072000', '1', no(''), no('-1'), no('1y')],
  'hsts-include-subdomains': BOOL,
  'hsts-preload': BOOL,
  'allow-snippet-annotations': BOOL,
  'annotations-risk-level': ['High', 'Critical', 'Low', 'medium', no(''), no('Extreme')],
  'allow-cross-namespace-resources': BOOL,
  'limit-req-status-code': ['503', '429', '400', '599', no('200'), no(''), no('600')],
  'limit-conn-status-code': ['503', '429', '400', '599', no('200'), no('')],
  'load-balance': ['round_robin', 'ewma', no('least_conn_x'), no(''), no('random')],
  'use-forwarded-headers': BOOL,
  'enable-real-ip': BOOL,
  'use-proxy-protocol': BOOL,
  'forwarded-for-header': ['X-Forwarded-For', 'X-Real-IP', 'CF-Connecting-IP', no(''), no('X_Forwarded_For')],
  'proxy-real-ip-cidr': ['0.0.0.0/0', '10.0.0.0/8,192.168.0.0/16', '::/0', '127.0.0.1', no(''), no('10.0.0.0/33')],
  'use-gzip': BOOL,
  'gzip-level': ['1', '5', '9', no('0'), no('10'), no('')],
  'gzip-min-length': ['256', '0', '1000', '20', no(''), no('-1')],
  'gzip-types': [
    INGRESS_NGINX_GZIP_TYPES,
    'text/html',
    '*',
    'text/html application/json',
    'application/json text/html text/css',
    'TEXT/HTML',
    no(''),
    no('text/css; gzip off'),
  ],
  'log-format-upstream': [
    INGRESS_NGINX_LOG_FORMAT,
    JSON_LOG_FORMAT,
    '$remote_addr $status',
    'plain text',
    // every variable the validator knows, and one of each family
    [...LOG_VARIABLES, 'http_x_a', 'sent_http_x_a', 'cookie_a', 'arg_a', 'upstream_http_x_a', 'upstream_cookie_a']
      .map((v) => `$${v}`)
      .join(' '),
    '${REMOTE_ADDR}x',
    no(''),
    no('$'),
    no('$no_such_variable'),
  ],
  'access-log-path': [
    '/dev/stdout',
    'logs/access.log',
    'logs/a.log',
    no('logs/a/b.log'),
    no('/dev/stderr'),
    // ingress-nginx's default, a link to its stdout: read as /dev/stdout
    '/var/log/nginx/access.log',
    no(''),
  ],
  // Taken, it wins over access-log-path: its refused values come in the rounds where access-log-path has values.
  'http-access-log-path': [
    no('logs/a/b.log'),
    no('/dev/stderr'),
    no(''),
    no('/etc/cron.d/x'),
    no('logs/../nginx.conf'),
    no('syslog:server=127.0.0.1'),
    no('logs'),
    'logs/http.log',
    '/dev/stdout',
    '/var/log/nginx/access.log',
  ],
  'log-format-escape-json': BOOL,
  'log-format-escape-none': BOOL,
  'disable-access-log': BOOL,
  'disable-http-access-log': BOOL,
  'server-tokens': BOOL,
  'keep-alive-requests': ['1000', '100', '1', '0', '10000', no(''), no('-1')],
  'upstream-keepalive-connections': ['320', '0', '1', '32', '4096', no('4097'), no(''), no('-1')],
  'upstream-keepalive-time': ['1h', '60s', '30', '1d', no(''), no('1 h')],
  'upstream-keepalive-timeout': ['60', '60s', '0', '5m', no(''), no('x')],
  'upstream-keepalive-requests': ['10000', '1', '100', '1000000', no('0'), no('')],
  'proxy-buffer-size': ['4k', '8k', '16k', '1', '1024m', no('0'), no(''), no('1025m')],
  'proxy-buffers-number': ['4', '3', '8', '1024', no('2'), no(''), no('0')],
  'gzip-disable': ['msie6', 'MSIE [1-6]\\.', '^Mozilla/4', 'curl|wget', no(''), no('(?<x>a)'), no('a{1,')],
  'ssl-session-tickets': BOOL,
  'enable-brotli': BOOL,
  'brotli-level': ['4', '0', '1', '11', no('12'), no('')],
  'brotli-min-length': ['20', '0', '1000', '256', no(''), no('-1')],
  'brotli-types': [
    `application/xml+rss ${INGRESS_NGINX_GZIP_TYPES}`,
    'text/html',
    '*',
    'application/json text/html',
    no(''),
    no('text/css;'),
  ],
  // Any namespace, as ingress-nginx: the watcher follows the header ConfigMaps by name.
  'add-headers': [
    'ingress/custom-headers',
    'ingress/empty-headers',
    'other/custom-headers',
    no('other/missing'),
    no('nope'),
    no(''),
  ],
  'proxy-set-headers': ['ingress/proxy-headers', 'ingress/empty-headers', no('ingress/missing'), no('a/b/c'), no('')],
  'server-snippet': [
    'add_header X-Frame-Options SAMEORIGIN;',
    'add_header X-Served-By "by $host" always;',
    'add_header X-A a; add_header X-B b;',
    'more_set_headers "X-More: y";',
    no('location /x { return 200; }'),
    no('add_header Set-Cookie a=b;'),
    '', // no directive: nothing to refuse
  ],
  'http-snippet': [
    'add_header X-Frame-Options SAMEORIGIN;',
    'add_header X-Http-Level "yes" always;',
    no('server { listen 81; }'),
    no('include /etc/passwd;'),
    '',
  ],
  'enable-modsecurity': BOOL,
  'enable-owasp-modsecurity-crs': BOOL,
  'modsecurity-snippet': [
    'SecRuleEngine On',
    '# tuning\nSecRuleRemoveById 920350\nSecAction "id:300001,phase:1,nolog,pass,setvar:tx.paranoia_level=2"',
    'SecRuleUpdateTargetById 942100 "!ARGS:password"\nSecRule ARGS "@rx ^x" "id:300002,phase:2,deny"',
    no('Include /etc/passwd'),
    no('SecRule ARGS "@rx x" "id:107,phase:2,deny"'),
    no('SecAuditLog /tmp/audit.log'),
    '',
  ],
  // OpenTelemetry: with the Lua balancer, each value of a round renders the traced locations and their Lua lines
  'enable-opentelemetry': BOOL,
  'opentelemetry-trust-incoming-span': BOOL,
  'opentelemetry-operation-name': [
    '',
    'HTTP $request_method $service_name $uri',
    '$namespace/$ingress_name $location_path',
    no('$remote_addr'),
    no('a\nb'),
    no('x'.repeat(257)),
  ],
  'otlp-collector-host': [
    '',
    'otel-collector.monitoring.svc',
    '10.0.0.7',
    'fd00::7',
    no('http://collector'),
    no('Collector'),
    no('a b'),
  ],
  'otlp-collector-port': ['4318', '4317', '1', '65535', no('0'), no('65536'), no('')],
  'otel-service-name': ['nginx', 'ingress edge', no(''), no('x'.repeat(129)), no('tab\there')],
  'otel-sampler': ['AlwaysOff', 'AlwaysOn', 'TraceIdRatioBased', no('alwayson'), no('')],
  'otel-sampler-ratio': ['0.01', '1.0', '0', '1', '.5', '0.000001', no('1.5'), no('-0.1'), no('1e-3'), no('')],
  'otel-sampler-parent-based': BOOL,
  'otel-max-queuesize': ['2048', '1', '65536', no('0'), no('65537'), no('')],
  'otel-schedule-delay-millis': ['5000', '1', '3600000', no('0'), no('-1'), no('')],
  'otel-max-export-batch-size': ['512', '1', '65536', no('0'), no('65537'), no('')],
};

/** Keys that render only under a switch, which is set `on` for them. */
const SWITCHES: readonly { readonly key: string; readonly on: string; readonly dependents: RegExp }[] = [
  { key: 'use-gzip', on: 'true', dependents: /^gzip-/ },
  { key: 'enable-brotli', on: 'true', dependents: /^brotli-/ },
  { key: 'enable-modsecurity', on: 'true', dependents: /^(modsecurity-snippet|enable-owasp-modsecurity-crs)$/ },
  { key: 'disable-access-log', on: 'false', dependents: /^(http-)?access-log-path$/ },
  { key: 'disable-http-access-log', on: 'false', dependents: /^(http-)?access-log-path$/ },
];

/** The header ConfigMaps add-headers and proxy-set-headers name. */
const HEADER_CONFIG_MAPS = [
  {
    metadata: { namespace: 'ingress', name: 'custom-headers' },
    data: { 'X-Using-Nginx-Controller': 'true', 'X-Request-Start': 't=${msec}', 'X-Quote': 'a "quoted" \\ value' },
  },
  {
    metadata: { namespace: 'ingress', name: 'proxy-headers' },
    data: { 'X-Different-Name': 'true', 'X-Request-Start': 't=${msec}', 'X-Client': '$remote_addr' },
  },
  { metadata: { namespace: 'ingress', name: 'empty-headers' }, data: {} },
  { metadata: { namespace: 'other', name: 'custom-headers' }, data: { 'X-A': 'b' } },
];

const spelled = (v: Value) => (typeof v === 'string' ? v : v.refused);

let scratch: string;
let modules: NginxModules;
let lua: LuaSettings;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'ia-config-values-'));
  modules = await findModules(nginxBinary());
  const dir = await modulesPath(nginxBinary());
  lua = {
    modules: [join(dir, 'ndk_http_module.so'), join(dir, 'ngx_http_lua_module.so')],
    packagePath: `${LUA_FOLDER}/?.lua;;`,
    controlSocket: join(scratch, 'control.sock'),
    requestMetrics: true,
  };
});
afterAll(() => rm(scratch, { recursive: true, force: true }));

function snapshotWith(data: Record<string, string>): Snapshot {
  const [service, ...slices] = serviceWithEndpoints('web', [{ port: 9000 }]);
  return {
    ingressClasses: [ingressClass()],
    ingresses: [
      ingress(
        'web',
        { 'web.example.com': [{ path: '/', service: 'web' }] },
        { tls: [{ hosts: ['web.example.com'], secretName: 'missing' }] },
      ),
    ],
    services: [service],
    endpointSlices: slices,
    secrets: [],
    configMaps: [{ metadata: { namespace: 'ingress', name: 'config' }, data }, ...HEADER_CONFIG_MAPS],
  } as unknown as Snapshot;
}

let run = 0;
/** check renders `data` in `mode`, runs nginx -t, and gives its verdict and the problems on each key. */
async function check(data: Record<string, string>, mode: 'rendered' | 'lua') {
  const options: BuildOptions = {
    ...defaultBuildOptions,
    configMap: 'ingress/config',
    modules,
    ...(mode === 'lua' ? { dynamic: lua } : {}),
  };
  const { model, problems } = buildModel(snapshotWith(data), options);
  const dir = join(scratch, `r${run++}`);
  const conf = await writeConfigSet(dir, render(model, await loadTemplate()), model.certificates);
  const verdict = await testConfig(nginxBinary(), dir, conf);
  const onKey = new Map<string, string>();
  for (const p of problems)
    if (p.kind === 'ConfigMap' && p.name === 'config' && p.field.startsWith('data.'))
      onKey.set(p.field.slice(5), p.message);
  return { ...verdict, onKey };
}

/** rounds lays the table out as configs: round i holds every key's i-th value, switches on for their dependents. */
function rounds(): Record<string, Value>[] {
  const longest = Math.max(...Object.values(VALUES).map((v) => v.length));
  const out: Record<string, Value>[] = [];
  const alone: Record<string, Value>[] = [];
  for (let i = 0; i < longest; i++) {
    const round: Record<string, Value> = {};
    for (const [key, values] of Object.entries(VALUES)) if (i < values.length) round[key] = values[i]!;
    for (const s of SWITCHES) {
      if (!Object.keys(round).some((k) => s.dependents.test(k))) continue;
      if (round[s.key] !== undefined) alone.push({ [s.key]: round[s.key]! });
      round[s.key] = s.on;
    }
    // nginx wants the http2 sizes as a pair: a round with one of them refused has the other refused too.
    const pair = ['http2-max-field-size', 'http2-max-header-size'];
    if (pair.some((k) => typeof round[k] !== 'string')) for (const k of pair) delete round[k];
    out.push(round);
  }
  return [...out, ...alone];
}

describe('every ConfigMap key, every documented value, through nginx -t', () => {
  it('has a table entry for every key of the registry, and none for a key it does not know', () => {
    const registry = configKeys.map((k) => k.key).sort();
    expect(Object.keys(VALUES).sort()).toEqual(registry);
    for (const [key, values] of Object.entries(VALUES)) {
      expect(
        values.some((v) => typeof v === 'string'),
        `${key} has a value it takes`,
      ).toBe(true);
    }
  });

  describe.each(['rendered', 'lua'] as const)('%s', (mode) => {
    it.each(rounds().map((round, i) => ({ i, round })))('round $i', async ({ round }) => {
      const data = Object.fromEntries(Object.entries(round).map(([k, v]) => [k, spelled(v)]));
      const result = await check(data, mode);
      expect(result.output, JSON.stringify(data, null, 1)).not.toMatch(/\[emerg\]/);
      expect(result.ok).toBe(true);
      for (const [key, value] of Object.entries(round)) {
        // taken, but said to trace nothing where backends are rendered (spans are the Lua balancer's)
        const on = checkBool(value);
        if (mode === 'rendered' && key === 'enable-opentelemetry' && on.ok && on.value)
          expect(result.onKey.get(key)).toBe('spans need the Lua balancer (--dynamic-backends); nothing is traced');
        else if (typeof value === 'string')
          expect(result.onKey.get(key), `${key}: ${JSON.stringify(value)}`).toBeUndefined();
        else expect(result.onKey.get(key), `${key}: ${JSON.stringify(value.refused)} refused`).toBeDefined();
      }
    });
  });
});
