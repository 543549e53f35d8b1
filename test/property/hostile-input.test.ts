/**
 * Hostile strings in every field that reaches nginx.conf: the object is rejected (a problem)
 * or the config is still valid, and in no case does the config hold a directive the template
 * did not write. A sample also goes through a real `nginx -t`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CPU_BOUND_MS } from '../support/timeouts.js';
import { supportedKeys } from '../../src/model/annotations/registry.js';
import { ANNOTATION_PREFIX } from '../../src/model/annotations/types.js';
import { buildModel } from '../../src/model/build.js';
import { configKeys } from '../../src/model/config-map/registry.js';
import { ALLOWED_DIRECTIVES } from '../../src/model/snippet-policy.js';
import { checkTlsPair } from '../../src/model/certificate.js';
import { servedNames } from '../../src/model/dynamic-tables.js';
import { DynamicSplit } from '../../src/sync/dynamic-split.js';
import type { RouteTable } from '../../src/model/pushed-tables.js';
import { CONTROLLER, gateway, gatewayClass, grpcRoute, listener, route } from '../gateway/fixtures.js';
import { checkHost, checkIp } from '../../src/model/validate.js';
import type { Snapshot } from '../../src/model/snapshot.js';
import { writeConfigSet } from '../../src/nginx/files.js';
import { nginxBinary, testConfig } from '../../src/nginx/binary.js';
import { nginxTestBuildOptions } from '../support/nginx.js';
import { readTemplateSources, DEFAULT_TEMPLATE } from '../../src/render/load.js';
import { compileTemplate, render } from '../../src/render/render.js';
import { issueCertificate } from '../../src/tls/issue.js';
import { ingress, ingressClass, serviceWithEndpoints, tlsSecret } from '../support/manifests.js';
import { foreignDirectives as foreignOrEntries, templateDirectives } from '../support/nginx-conf.js';

/** foreignDirectives, less split_clients entries, which (like map entries) are data, not directives. */
const foreignDirectives: typeof foreignOrEntries = (text, allowed) =>
  foreignOrEntries(text, allowed).filter((d) => d.context.at(-1) !== 'split_clients');

const sources = await readTemplateSources(DEFAULT_TEMPLATE);
const template = compileTemplate(sources);
const allowed = templateDirectives([sources.main, ...Object.values(sources.partials)]);
const options = {
  // add-headers needs headers-more, enable-brotli the brotli module: nginxTestBuildOptions has them as found
  ...(await nginxTestBuildOptions()),
  // The stream block too: TCP and UDP services from their ConfigMaps, and ssl-passthrough (nginx -t wants the
  // socket folder to exist).
  tcpServicesConfigMap: 'ingress/tcp',
  udpServicesConfigMap: 'ingress/udp',
  enableSslPassthrough: true,
  stream: { modules: ['/usr/lib/nginx/modules/ngx_stream_module.so'], socketDir: '/tmp' },
};

let base: Snapshot;
let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'ia-hostile-'));
  const leaf = await issueCertificate({ commonName: 'a.example.com', dnsNames: ['a.example.com'] });
  const main = ingress(
    'main',
    {
      'a.example.com': [
        { path: '/api', service: 'web', port: 'http' },
        { path: '/x', pathType: 'Exact', service: 'web' },
      ],
    },
    { tls: [{ hosts: ['a.example.com'], secretName: 'tls' }], annotations: {} },
  );
  base = {
    ingressClasses: [ingressClass()],
    ingresses: [
      { ...main, spec: { ...main.spec, defaultBackend: { service: { name: 'web', port: { number: 80 } } } } },
      ingress(
        'canary',
        { 'a.example.com': [{ path: '/api', service: 'web', port: 'http' }] },
        { annotations: { [`${ANNOTATION_PREFIX}canary`]: 'true', [`${ANNOTATION_PREFIX}canary-weight`]: '10' } },
      ),
    ],
    services: [serviceWithEndpoints('web', [{ port: 9000 }])[0] as Snapshot['services'][number]],
    endpointSlices: serviceWithEndpoints('web', [{ port: 9000 }]).slice(1) as Snapshot['endpointSlices'],
    secrets: [
      tlsSecret('tls', leaf.certPem, leaf.keyPem),
      {
        metadata: { namespace: 'default', name: 'basic' },
        data: { auth: Buffer.from('user:{PLAIN}pass\n').toString('base64') },
      },
    ],
    gatewayClasses: [gatewayClass()],
    gateways: [
      gateway([
        listener('http', { hostname: 'gw.example.com' }),
        listener('https', {
          port: 443,
          protocol: 'HTTPS',
          hostname: 'gws.example.com',
          tls: { certificateRefs: [{ name: 'tls' }] },
        }),
        // a GRPCRoute's listener: HTTPS (h2 by ALPN), as the Ingress port 80 takes no h2c
        listener('grpc', {
          port: 443,
          protocol: 'HTTPS',
          hostname: 'grpc.example.com',
          tls: { certificateRefs: [{ name: 'tls' }] },
        }),
      ]),
    ],
    grpcRoutes: [
      grpcRoute('g', {
        parentRefs: [{ name: 'gw', namespace: 'default', sectionName: 'grpc' }],
        rules: [
          {
            matches: [{ method: { service: 'pkg.Svc', method: 'Do' }, headers: [{ name: 'x-g', value: 'v' }] }],
            filters: [
              {
                type: 'ResponseHeaderModifier',
                responseHeaderModifier: { add: [{ name: 'x-r', value: 'v' }], remove: ['x-z'] },
              },
            ],
            backendRefs: [{ name: 'web', port: 80 }],
          },
        ],
      }),
    ],
    httpRoutes: [
      route('r', {
        rules: [
          {
            matches: [
              {
                path: { type: 'PathPrefix', value: '/p' },
                headers: [{ name: 'x-h', value: 'v' }],
                queryParams: [{ type: 'RegularExpression', name: 'q', value: '[a-z]+' }],
              },
            ],
            filters: [
              { type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-s', value: 'v' }] } },
              {
                type: 'URLRewrite',
                urlRewrite: { hostname: 'in.example.com', path: { type: 'ReplaceFullPath', replaceFullPath: '/f' } },
              },
              { type: 'RequestMirror', requestMirror: { backendRef: { name: 'web', port: 80 } } },
              {
                type: 'CORS',
                cors: { allowOrigins: ['https://a.example.com'], allowHeaders: ['x-a'], exposeHeaders: ['x-b'] },
              },
            ],
            backendRefs: [
              {
                name: 'web',
                port: 80,
                weight: 2,
                filters: [
                  { type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-b', value: 'v' }] } },
                ],
              },
            ],
          },
          {
            matches: [{ path: { type: 'RegularExpression', value: '/r[0-9]+' } }],
            filters: [
              {
                type: 'RequestRedirect',
                requestRedirect: {
                  hostname: 'to.example.com',
                  path: { type: 'ReplaceFullPath', replaceFullPath: '/t' },
                },
              },
            ],
          },
        ],
      }),
    ],
    referenceGrants: [],
    namespaces: [],
    configMaps: [
      { metadata: { namespace: 'ingress', name: 'config' }, data: {} },
      { metadata: { namespace: 'ingress', name: 'tcp' }, data: { '9000': 'default/web:80:PROXY:PROXY' } },
      { metadata: { namespace: 'ingress', name: 'udp' }, data: { '9053': 'default/web:http' } },
    ],
  };
});
afterAll(() => rm(scratch, { recursive: true, force: true }));

const nasty = fc.constantFrom(
  ';',
  '{',
  '}',
  '"',
  "'",
  '$',
  '\n',
  '\r',
  '#',
  '\0',
  '\\',
  ' ',
  '\t',
  '`',
  '*',
  '/',
  '.',
  '..',
  '~',
  'include /etc/passwd;',
  '}\n server { listen 1;',
  '$host',
  '${x}',
  '\u2028',
  'é',
  'A',
  '-',
  '_',
  ':',
);
const plausible = fc.constantFrom(
  'a.example.com',
  '/api',
  'http',
  '80',
  'TLSv1.2',
  '1m',
  '10s',
  'true',
  'auto',
  '4 8k',
  'web',
  '127.0.0.1',
  '::1',
);
/** hostile strings: fragments of nginx syntax mixed with plausible values, random unicode, or very long. */
const hostile = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .array(fc.oneof(nasty, plausible, fc.string({ maxLength: 4 })), { minLength: 1, maxLength: 8 })
      .map((a) => a.join('')),
  },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ minLength: 3000, maxLength: 6000 }) },
);

type Edit = (s: Snapshot, v: string) => void;
/** headers points the ConfigMap's `key` (add-headers, proxy-set-headers) at a header ConfigMap holding `data`. */
const headers = (s: Snapshot, key: string, data: Record<string, string>) => {
  set(s.configMaps[0], ['data'], { [key]: 'ingress/headers' });
  (s.configMaps as unknown[]).push({ metadata: { namespace: 'ingress', name: 'headers' }, data });
};
const set = (obj: unknown, path: (string | number)[], value: unknown) => {
  let o = obj as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) o = o[key] as Record<string | number, unknown>;
  o[path.at(-1)!] = value;
};
const ing = (s: Snapshot) => s.ingresses[0] as unknown;

/** The annotations an annotation needs beside it to take effect at all (auth-realm needs auth-type, ...). */
function companions(key: string): Record<string, string> {
  if (key.startsWith('auth-')) return { 'auth-type': 'basic', 'auth-secret': 'basic' };
  if (key.startsWith('session-cookie-') || key === 'affinity-mode') return { affinity: 'cookie' };
  if (key.startsWith('cors-')) return { 'enable-cors': 'true' };
  if (key === 'rewrite-target') return { 'use-regex': 'true' };
  if (key === 'custom-http-errors') return { 'default-backend': 'web' };
  return {};
}
const annotate = (s: Snapshot, index: number, values: Record<string, string>) =>
  set(
    s.ingresses[index],
    ['metadata', 'annotations'],
    Object.fromEntries(Object.entries(values).map(([k, v]) => [`${ANNOTATION_PREFIX}${k}`, v])),
  );
/** One field per supported annotation key (the canary ones on the canary Ingress). */
const annotationFields: Record<string, Edit> = Object.fromEntries(
  supportedKeys.map(({ key: { key } }) => [
    `annotation ${key}`,
    ((s, v) =>
      key.startsWith('canary')
        ? annotate(s, 1, { canary: 'true', [key]: v })
        : annotate(s, 0, { ...companions(key), [key]: v })) as Edit,
  ]),
);
/** Every field of every kind that buildModel reads, each a way to put a hostile value there. */
const fields: Record<string, Edit> = {
  'ingress name': (s, v) => set(ing(s), ['metadata', 'name'], v),
  'ingress namespace': (s, v) => set(ing(s), ['metadata', 'namespace'], v),
  'ingress creationTimestamp': (s, v) => set(ing(s), ['metadata', 'creationTimestamp'], v),
  ingressClassName: (s, v) => set(ing(s), ['spec', 'ingressClassName'], v),
  'legacy class annotation': (s, v) => (
    set(ing(s), ['spec', 'ingressClassName'], undefined),
    set(ing(s), ['metadata', 'annotations'], { 'kubernetes.io/ingress.class': v })
  ),
  host: (s, v) => set(ing(s), ['spec', 'rules', 0, 'host'], v),
  path: (s, v) => set(ing(s), ['spec', 'rules', 0, 'http', 'paths', 0, 'path'], v),
  'exact path': (s, v) => set(ing(s), ['spec', 'rules', 0, 'http', 'paths', 1, 'path'], v),
  pathType: (s, v) => set(ing(s), ['spec', 'rules', 0, 'http', 'paths', 0, 'pathType'], v),
  'backend service name': (s, v) =>
    set(ing(s), ['spec', 'rules', 0, 'http', 'paths', 0, 'backend', 'service', 'name'], v),
  'backend port name': (s, v) =>
    set(ing(s), ['spec', 'rules', 0, 'http', 'paths', 0, 'backend', 'service', 'port'], { name: v }),
  'default backend name': (s, v) => set(ing(s), ['spec', 'defaultBackend', 'service', 'name'], v),
  'tls host': (s, v) => set(ing(s), ['spec', 'tls', 0, 'hosts', 0], v),
  'tls secretName': (s, v) => set(ing(s), ['spec', 'tls', 0, 'secretName'], v),
  'ingress class controller': (s, v) => set(s.ingressClasses[0], ['spec', 'controller'], v),
  'service port name': (s, v) => set(s.services[0], ['spec', 'ports', 0, 'name'], v),
  'service type': (s, v) => set(s.services[0], ['spec', 'type'], v),
  'service name': (s, v) => set(s.services[0], ['metadata', 'name'], v),
  'endpoint address': (s, v) => set(s.endpointSlices[0], ['endpoints', 0, 'addresses', 0], v),
  'endpoint slice port name': (s, v) => set(s.endpointSlices[0], ['ports', 0, 'name'], v),
  'endpoint slice address type': (s, v) => set(s.endpointSlices[0], ['addressType'], v),
  'endpoint slice service label': (s, v) =>
    set(s.endpointSlices[0], ['metadata', 'labels'], { 'kubernetes.io/service-name': v }),
  'secret tls.crt': (s, v) => set(s.secrets[0], ['data', 'tls.crt'], Buffer.from(v).toString('base64')),
  'secret tls.key raw': (s, v) => set(s.secrets[0], ['data', 'tls.key'], v),
  'secret name': (s, v) => set(s.secrets[0], ['metadata', 'name'], v),
  'configmap key name': (s, v) => set(s.configMaps[0], ['data'], { [v]: '1' }),
  ...Object.fromEntries(
    ['add-headers', 'proxy-set-headers'].flatMap((key) => [
      [`${key} header name`, ((s, v) => headers(s, key, { [v]: '1' })) as Edit],
      [`${key} header value`, ((s, v) => headers(s, key, { 'X-A': v })) as Edit],
    ]),
  ),
  ...Object.fromEntries(
    configKeys.map((k) => [`configmap ${k.key}`, ((s, v) => set(s.configMaps[0], ['data'], { [k.key]: v })) as Edit]),
  ),
  'secret auth (htpasswd)': (s, v) => (
    annotate(s, 0, { 'auth-type': 'basic', 'auth-secret': 'basic' }),
    set(s.secrets[1], ['data', 'auth'], Buffer.from(v).toString('base64'))
  ),
  ...Object.fromEntries(
    (
      [
        ['gateway listener hostname', ['gateways', 0, 'spec', 'listeners', 0, 'hostname']],
        ['gateway certificateRef name', ['gateways', 0, 'spec', 'listeners', 1, 'tls', 'certificateRefs', 0, 'name']],
        ['gateway name', ['gateways', 0, 'metadata', 'name']],
        ['httproute hostname', ['httpRoutes', 0, 'spec', 'hostnames']],
        ['httproute path', ['httpRoutes', 0, 'spec', 'rules', 0, 'matches', 0, 'path', 'value']],
        ['httproute regex path', ['httpRoutes', 0, 'spec', 'rules', 1, 'matches', 0, 'path', 'value']],
        ['httproute header name', ['httpRoutes', 0, 'spec', 'rules', 0, 'matches', 0, 'headers', 0, 'name']],
        ['httproute header value', ['httpRoutes', 0, 'spec', 'rules', 0, 'matches', 0, 'headers', 0, 'value']],
        ['httproute query regex', ['httpRoutes', 0, 'spec', 'rules', 0, 'matches', 0, 'queryParams', 0, 'value']],
        ['httproute query name', ['httpRoutes', 0, 'spec', 'rules', 0, 'matches', 0, 'queryParams', 0, 'name']],
        ['httproute method', ['httpRoutes', 0, 'spec', 'rules', 0, 'matches', 0, 'method']],
        [
          'httproute set header',
          ['httpRoutes', 0, 'spec', 'rules', 0, 'filters', 0, 'requestHeaderModifier', 'set', 0, 'value'],
        ],
        ['httproute rewrite hostname', ['httpRoutes', 0, 'spec', 'rules', 0, 'filters', 1, 'urlRewrite', 'hostname']],
        [
          'httproute rewrite path',
          ['httpRoutes', 0, 'spec', 'rules', 0, 'filters', 1, 'urlRewrite', 'path', 'replaceFullPath'],
        ],
        [
          'httproute mirror backend',
          ['httpRoutes', 0, 'spec', 'rules', 0, 'filters', 2, 'requestMirror', 'backendRef', 'name'],
        ],
        ['httproute cors origin', ['httpRoutes', 0, 'spec', 'rules', 0, 'filters', 3, 'cors', 'allowOrigins', 0]],
        ['httproute cors header', ['httpRoutes', 0, 'spec', 'rules', 0, 'filters', 3, 'cors', 'allowHeaders', 0]],
        ['httproute cors expose', ['httpRoutes', 0, 'spec', 'rules', 0, 'filters', 3, 'cors', 'exposeHeaders', 0]],
        [
          'httproute redirect hostname',
          ['httpRoutes', 0, 'spec', 'rules', 1, 'filters', 0, 'requestRedirect', 'hostname'],
        ],
        ['httproute backend name', ['httpRoutes', 0, 'spec', 'rules', 0, 'backendRefs', 0, 'name']],
        [
          'httproute backend filter header',
          [
            'httpRoutes',
            0,
            'spec',
            'rules',
            0,
            'backendRefs',
            0,
            'filters',
            0,
            'requestHeaderModifier',
            'set',
            0,
            'value',
          ],
        ],
        ['httproute timeout', ['httpRoutes', 0, 'spec', 'rules', 0, 'timeouts']],
        ['grpcroute service', ['grpcRoutes', 0, 'spec', 'rules', 0, 'matches', 0, 'method', 'service']],
        ['grpcroute method', ['grpcRoutes', 0, 'spec', 'rules', 0, 'matches', 0, 'method', 'method']],
        ['grpcroute header name', ['grpcRoutes', 0, 'spec', 'rules', 0, 'matches', 0, 'headers', 0, 'name']],
        ['grpcroute header value', ['grpcRoutes', 0, 'spec', 'rules', 0, 'matches', 0, 'headers', 0, 'value']],
        [
          'grpcroute response header name',
          ['grpcRoutes', 0, 'spec', 'rules', 0, 'filters', 0, 'responseHeaderModifier', 'add', 0, 'name'],
        ],
        [
          'grpcroute response header value',
          ['grpcRoutes', 0, 'spec', 'rules', 0, 'filters', 0, 'responseHeaderModifier', 'add', 0, 'value'],
        ],
        [
          'grpcroute removed header',
          ['grpcRoutes', 0, 'spec', 'rules', 0, 'filters', 0, 'responseHeaderModifier', 'remove', 0],
        ],
      ] as const
    ).map(([name, path]) => [
      name,
      ((s, v) =>
        set(
          s,
          [...path],
          name === 'httproute hostname' ? [v] : name === 'httproute timeout' ? { request: v } : v,
        )) as Edit,
    ]),
  ),
  'tcp services port': (s, v) => set(s.configMaps[1], ['data'], { [v]: 'default/web:80' }),
  'tcp services reference': (s, v) => set(s.configMaps[1], ['data'], { '9000': v }),
  'udp services reference': (s, v) => set(s.configMaps[2], ['data'], { '9053': v }),
  'annotation key name': (s, v) => set(ing(s), ['metadata', 'annotations'], { [`${ANNOTATION_PREFIX}${v}`]: 'true' }),
  ...annotationFields,
};

const hostileEdit = fc.record({ field: fc.constantFrom(...Object.keys(fields)), value: hostile });

function build(edit: { field: string; value: string }) {
  const snapshot = structuredClone(base);
  fields[edit.field]!(snapshot, edit.value);
  const { model, problems } = buildModel(snapshot, options);
  return { model, problems, text: render(model, template) };
}

/** With the Lua balancer: nginx.conf names backends, and endpoints and host certificates go in the pushed tables. */
const luaOptions = {
  ...options,
  dynamic: { modules: [], packagePath: '/lua/?.lua;;', controlSocket: '/run/ia/control.sock', requestMetrics: true },
  gateway: { controllerName: CONTROLLER },
};

/** Plain, what lua/ingress_actors/validate.lua takes for header values, paths and regexes: no control characters. */
const PLAIN = /^[^\x00-\x1f\x7f]*$/;
const TOKEN = /^[A-Za-z0-9!#%&'*+.^_`|~-]{1,256}$/;
const HOSTNAME = /^[A-Za-z0-9.-]{1,253}$/;

/** expectRouteTable checks what validate.routes checks, for the strings a Kubernetes object put there. */
/** a CORS filter's origin as the router may match it: `*`, or scheme://host[:port] in lower case */
const CORS_ORIGIN = /^(?:\*|https?:\/\/(?:\*|(?:\*\.)?[a-z0-9.-]+)(?::[0-9]{1,5})?)$/;

function expectRouteTable(routes: RouteTable): void {
  for (const server of routes.servers) {
    expect(server.key).toMatch(/^\d+\/[A-Za-z0-9.*_-]+$/);
    for (const h of [server.tls?.listener ?? '', ...(server.tls?.listeners ?? [])])
      expect(h === '' || /^(?:\*\.)?[a-z0-9.-]+$/.test(h), h).toBe(true);
    for (const r of server.routes) {
      expect(r.path.value).toMatch(PLAIN);
      if (r.path.type !== 'RegularExpression') expect(r.path.value.startsWith('/')).toBe(true);
      for (const m of [...r.headers, ...r.queryParams]) {
        expect(m.name).toMatch(TOKEN);
        expect(m.value).toMatch(PLAIN);
      }
      for (const f of r.filters) {
        if (f.type === 'RequestHeaderModifier' || f.type === 'ResponseHeaderModifier') {
          for (const h of [...f.set, ...f.add]) {
            expect(h.name).toMatch(TOKEN);
            expect(h.value).toMatch(PLAIN);
          }
          for (const n of f.remove) expect(n).toMatch(TOKEN);
        }
        if ((f.type === 'RequestRedirect' || f.type === 'URLRewrite') && f.hostname)
          expect(f.hostname).toMatch(HOSTNAME);
        if ((f.type === 'RequestRedirect' || f.type === 'URLRewrite') && f.path)
          expect(f.path.value).toMatch(/^\/[^\x00-\x1f\x7f]*$/);
        if (f.type === 'RequestMirror' && f.backend) expect(f.backend).toMatch(UPSTREAM_NAME);
        if (f.type === 'CORS') {
          for (const o of f.allowOrigins) expect(o).toMatch(CORS_ORIGIN);
          for (const h of [...f.allowHeaders, ...f.exposeHeaders]) expect(h === '*' || TOKEN.test(h), h).toBe(true);
        }
      }
      for (const b of r.backends) {
        if (b.backend) expect(b.backend).toMatch(UPSTREAM_NAME);
        for (const f of b.filters ?? [])
          for (const h of [...f.set, ...f.add]) {
            expect(h.name).toMatch(TOKEN);
            expect(h.value).toMatch(PLAIN);
          }
      }
    }
  }
}

/** buildPushed is build() in Lua mode: the split model's nginx.conf and the tables pushed beside it. */
function buildPushed(edit: { field: string; value: string }) {
  const snapshot = structuredClone(base);
  fields[edit.field]!(snapshot, edit.value);
  const split = new DynamicSplit().split(buildModel(snapshot, luaOptions).model);
  return { text: render(split.model, template), tables: split.tables };
}

/**
 * UPSTREAM_NAME is what the model names upstreams (`namespace_service_port` and a variant suffix, which may hold a
 * cookie name) and lua/ingress_actors/validate.lua accepts: 1..255 of [A-Za-z0-9_.-].
 */
const UPSTREAM_NAME = /^[A-Za-z0-9_.-]{1,255}$/;
/** HASH_KEY is what lua/ingress_actors/validate.lua hash_key accepts: `$names` and [A-Za-z0-9_.:/-]. */
const HASH_KEY = /^(?:[A-Za-z0-9_.:/-]|\$[A-Za-z0-9_]+)+$/;

describe('hostile input, with the Lua balancer', () => {
  it('pushes only strings that passed a validator, and nginx.conf holds no directive the template did not write', () => {
    fc.assert(
      fc.property(hostileEdit, (edit) => {
        const { text, tables } = buildPushed(edit);
        expect(foreignDirectives(text, allowed)).toEqual([]);
        for (const b of tables.backends.backends) {
          expect(b.name).toMatch(UPSTREAM_NAME);
          expect(['round_robin', 'ewma', 'chash', 'sticky']).toContain(b.balance);
          if (b.hashKey !== null) expect(b.hashKey.length <= 255 && HASH_KEY.test(b.hashKey), b.hashKey).toBe(true);
          for (const e of b.endpoints) {
            const ip = checkIp(e.address);
            expect(ip.ok && ip.value.address === e.address, e.address).toBe(true);
            expect(Number.isInteger(e.port) && e.port >= 1 && e.port <= 65535, String(e.port)).toBe(true);
          }
        }
        expectRouteTable(tables.routes);
        for (const c of tables.certificates.certificates) {
          // Ingress TLS hosts, and Gateway servers by the key their routes table entries have
          for (const server of c.servers) expect(tables.routes.servers.map((s) => s.key)).toContain(server);
          for (const host of c.hosts) expect(checkHost(host.replace(/^\*\./, '')).ok, host).toBe(true);
          expect(checkTlsPair(c.cert, c.key, true).ok).toBe(true);
        }
      }),
      { numRuns: 2000 },
    );
    // 2,000 builds and renders: a slow shared machine takes more than the default 30 s
  }, 180_000);

  it('would notice a hostile endpoint in the table', () => {
    const { tables } = buildPushed({ field: 'endpoint address', value: '127.0.0.1' });
    expect(tables.backends.backends.flatMap((b) => b.endpoints.map((e) => e.address))).toContain('127.0.0.1');
    // the https listener's certificate is pushed for its hostname though its names do not cover it (the Gateway API's
    // rule: a listener serves its certificateRefs), and the Gateway's servers are there too
    expect(servedNames(tables.certificates)).toEqual([
      'a.example.com',
      'server 8443/grpc.example.com',
      'server 8443/gws.example.com',
    ]);
    expect(tables.routes.servers.map((s) => s.key)).toEqual([
      '8080/gw.example.com',
      '8443/grpc.example.com',
      '8443/gws.example.com',
    ]);
    // the GRPCRoute is served, so its fields reach the pushed table the property above checks
    const grpc = tables.routes.servers.find((s) => s.key === '8443/grpc.example.com')?.routes ?? [];
    expect(grpc.map((r) => [r.grpc, r.path.value, r.headers[0]?.name])).toEqual([[true, '/pkg.Svc/Do', 'x-g']]);
  });
});

describe('hostile input', () => {
  it(
    'never yields a directive the template did not write',
    () => {
      fc.assert(
        fc.property(hostileEdit, (edit) => {
          const { text } = build(edit);
          expect(foreignDirectives(text, allowed)).toEqual([]);
        }),
        { numRuns: 3000 },
      );
    },
    CPU_BOUND_MS,
  );

  it(
    'keeps hostile values inside their token even if a validator let them through',
    () => {
      // The second line of defence: put raw strings straight into the model, bypassing buildModel.
      fc.assert(
        fc.property(hostile, (value) => {
          const { model } = buildModel(base, options);
          const [server] = model.servers;
          const poisoned = {
            ...model,
            config: { ...model.config, proxyBodySize: value, logFormatUpstream: value, sslCiphers: value },
            hstsHeader: value,
            originalForwardedFor: value,
            maps: [{ source: value, variable: value, fallback: value, entries: [{ key: value, value }] }],
            requestZones: [{ zone: value, rate: value }],
            servers: [
              {
                ...server!,
                serverName: value,
                snippet: [{ name: 'add_header', args: [value, value] }],
                errorLocations: [{ name: value, code: 404, upstream: value }],
                clientAuth: { caFile: value, verifyClient: 'on' as const, depth: 1, errorPage: value },
                locations: server!.locations.map((l) => ({
                  ...l,
                  match: value,
                  upstream: value,
                  redirect: { code: 301, url: value },
                  appRoot: value,
                  rewrite: { regex: value, replacement: value },
                  auth: { realm: value, file: value },
                  access: [{ allow: true, address: value }],
                  proxyHeaders: { host: value, forwardedPrefix: value, clientCertificate: { pass: true } },
                  externalAuth: {
                    url: value,
                    host: value,
                    method: 'GET',
                    signin: value,
                    location: value,
                    signinLocation: value,
                    hsts: true,
                    alwaysSetCookie: true,
                    responseHeaders: [{ header: value, source: '$upstream_http_x', variable: '$ia_auth_header_0' }],
                  },
                  proxy: {
                    connectTimeout: value,
                    sendTimeout: value,
                    readTimeout: value,
                    buffering: null,
                    buffers: null,
                    nextUpstream: [value],
                    nextUpstreamTries: null,
                    nextUpstreamTimeout: value,
                    httpVersion: null,
                    requestBuffering: null,
                    redirect: { from: value, to: value },
                    limitRate: null,
                    limitRateAfter: null,
                  },
                  setCookie: value,
                  info: { namespace: value, ingressName: value, serviceName: value, servicePort: value },
                  customDefaultBackend: true,
                  snippet: [{ name: 'add_header', args: [value, value, value] }],
                  limitRequests: { zone: value, burst: 1 },
                  pass: { grpc: false, url: value, balancedUrl: value, upstreamName: value, canary: null },
                })),
              },
            ],
            upstreams: model.upstreams.map((u) => ({
              ...u,
              name: value,
              hashKey: value,
              endpoints: [{ address: value }],
            })),
          };
          let text: string;
          try {
            text = render(poisoned, template);
          } catch (error) {
            expect((error as Error).name).toBe('RenderError'); // control characters are refused, not written
            expect(value).toMatch(/[\x00-\x1f\x7f]/);
            return;
          }
          expect(foreignDirectives(text, allowed)).toEqual([]);
        }),
        { numRuns: 1000 },
      );
    },
    CPU_BOUND_MS,
  );

  it('would notice an injected directive', () => {
    const text = 'http { server { server_name a.example.com; lua_code_cache off; } }';
    expect(foreignDirectives(text, allowed).map((d) => d.name)).toEqual(['lua_code_cache']);
  });

  it('either rejects the object or writes a config that passes nginx -t', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(hostileEdit, async (edit) => {
        const { model, text } = build(edit);
        const dir = join(scratch, String(run++));
        const conf = await writeConfigSet(dir, text, model.certificates);
        const verdict = await testConfig(nginxBinary(), dir, conf);
        expect(verdict.output).toBe('');
        expect(verdict.ok).toBe(true);
        await rm(dir, { recursive: true, force: true });
      }),
      { numRuns: 60 },
    );
  }, 120_000);

  it('covers every field the model reads', () => {
    expect(Object.keys(fields).length).toBeGreaterThanOrEqual(27 + configKeys.length + supportedKeys.length);
  });

  it(
    "with snippets allowed, writes only directives of the allow-list for the snippet's context, inside no block of " +
      'their own',
    () => {
      const allowedIn = (context: 'location' | 'server', name: string) =>
        ALLOWED_DIRECTIVES.some((d) => d.name === name && d.contexts.includes(context));
      const snippet = fc.oneof(
        hostile,
        fc
          .array(
            fc.oneof(
              nasty,
              plausible,
              fc.constantFrom('add_header X 1;', 'if ($x) {', 'return 403;', 'set $a b;', 'alias /;'),
            ),
            { maxLength: 8 },
          )
          .map((a) => a.join(' ')),
      );
      fc.assert(
        fc.property(fc.constantFrom('configuration-snippet', 'server-snippet'), snippet, (key, value) => {
          const snapshot = structuredClone(base);
          set(snapshot.configMaps[0], ['data'], {
            'allow-snippet-annotations': 'true',
            'annotations-risk-level': 'Critical',
          });
          annotate(snapshot, 0, { [key]: value });
          const { model } = buildModel(snapshot, options);
          const text = render(model, template);
          const context = key === 'server-snippet' ? ['http', 'server'] : ['http', 'server', 'location'];
          for (const d of foreignDirectives(text, allowed)) {
            expect(allowedIn(key === 'server-snippet' ? 'server' : 'location', d.name)).toBe(true);
            expect(d.context).toEqual(context);
          }
        }),
        { numRuns: 2000 },
      );
    },
    CPU_BOUND_MS,
  );
});
