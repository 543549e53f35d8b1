/**
 * Hostile objects for the bad-input part of the suite (fast-check): Ingresses, Services,
 * EndpointSlices, Secrets in namespace `hostile`, and the controller's ConfigMap, every string an
 * attacker (or a careless user) controls filled with fragments of nginx syntax, control
 * characters, unicode, huge values and plausible ones; plus deletes. Names come mostly from small
 * pools, so objects are updated and deleted as well as created, and reference each other.
 * Types are the API's own (strings stay strings): the real API server refuses wrongly typed
 * JSON at decoding, so such objects cannot reach a controller.
 */
import fc from 'fast-check';

/** HOSTILE_NAMESPACE holds every hostile object but the ConfigMap. */
export const HOSTILE_NAMESPACE = 'hostile';

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
  '%',
  '?',
  '&',
  '=',
  'include /etc/passwd;',
  '}\n server { listen 1;',
  '} location / { return 200 pwned; }',
  '$host',
  '${x}',
  '$request_uri',
  'lua_code_cache off;',
  '\u2028',
  '\u0085',
  'é',
  '\uFEFF',
  'A',
  '-',
  '_',
  ':',
  '@',
  '|',
  '(',
  ')',
  '^',
  '[',
  ']',
);
const plausible = fc.constantFrom(
  'h1.example.org',
  'x.example.org',
  '*.example.org',
  '/api',
  '/',
  'http',
  '80',
  '8080',
  'TLSv1.2',
  '1m',
  '10s',
  'true',
  'false',
  'auto',
  '4 8k',
  'svc-1',
  'sec-1',
  '127.0.0.1',
  '::1',
  '10.0.0.1',
  'https://auth.example.org/check',
  'GRPC',
  'HTTPS',
  '503',
  'cookie',
);

/** hostileString: fragments of nginx syntax mixed with plausible values, random unicode, or very long. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .array(fc.oneof(nasty, plausible, fc.string({ maxLength: 4 })), { minLength: 1, maxLength: 8 })
      .map((a) => a.join('')),
  },
  { weight: 2, arbitrary: plausible },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ minLength: 1000, maxLength: 5000 }) },
);

/** A value that is mostly one of `good` and sometimes hostile. */
const mostly = <T>(good: fc.Arbitrary<T>, weight = 4) =>
  fc.oneof({ weight, arbitrary: good }, { weight: 1, arbitrary: hostileString });
const pool = (prefix: string, size: number) => fc.integer({ min: 0, max: size - 1 }).map((i) => `${prefix}-${i}`);

const host = fc.oneof(
  { weight: 3, arbitrary: pool('h', 20).map((h) => `${h}.example.org`) },
  { weight: 1, arbitrary: fc.constant('*.example.org') },
  { weight: 3, arbitrary: hostileString },
  { weight: 1, arbitrary: hostileString.map((s) => `${s}.example.org`) },
);
// Exact and Prefix paths must start with '/' or the API server refuses them (422); most do, so
// the hostile rest reaches the controller's own validators.
const path = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('/', '/api', '/v1', '/static/x', '/a/b/c') },
  { weight: 3, arbitrary: hostileString.map((s) => `/${s}`) },
  { weight: 1, arbitrary: hostileString },
);
const pathType = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom('Prefix', 'Exact', 'ImplementationSpecific') },
  { weight: 1, arbitrary: hostileString },
);
const portNumber = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(80, 443, 8080) },
  { weight: 1, arbitrary: fc.integer({ min: -10, max: 70_000 }) },
);
const backend = fc.record({
  service: fc.record({
    name: mostly(pool('svc', 6)),
    port: fc.oneof(
      portNumber.map((number) => ({ number })),
      mostly(fc.constant('http')).map((name) => ({ name })),
    ),
  }),
});

/** ingress-nginx annotation names (implemented here or not: unknown ones must be reported, never written). */
const ANNOTATIONS = [
  'rewrite-target',
  'ssl-redirect',
  'force-ssl-redirect',
  'proxy-body-size',
  'auth-url',
  'auth-signin',
  'auth-type',
  'auth-secret',
  'auth-realm',
  'configuration-snippet',
  'server-snippet',
  'backend-protocol',
  'whitelist-source-range',
  'allowlist-source-range',
  'custom-http-errors',
  'default-backend',
  'upstream-vhost',
  'permanent-redirect',
  'temporal-redirect',
  'app-root',
  'use-regex',
  'canary',
  'canary-weight',
  'canary-by-header',
  'affinity',
  'session-cookie-name',
  'enable-cors',
  'cors-allow-origin',
  'limit-rps',
  'limit-connections',
  'proxy-read-timeout',
  'proxy-connect-timeout',
  'proxy-buffer-size',
  'client-body-buffer-size',
  'load-balance',
  'upstream-hash-by',
  'x-forwarded-prefix',
  'mirror-target',
  'from-to-www-redirect',
  'server-alias',
  'ssl-passthrough',
  'service-upstream',
  'proxy-set-headers',
  'modsecurity-snippet',
  'enable-modsecurity',
  'enable-owasp-core-rules',
  'modsecurity-transaction-id',
  'auth-method',
  'auth-response-headers',
  'auth-signin-redirect-param',
  'auth-tls-secret',
  'auth-tls-verify-client',
  'auth-tls-error-page',
  'proxy-redirect-from',
  'proxy-redirect-to',
  'limit-rate',
];
const annotationKey = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...ANNOTATIONS).map((k) => `nginx.ingress.kubernetes.io/${k}`) },
  { weight: 1, arbitrary: fc.constant('kubernetes.io/ingress.class') },
  { weight: 1, arbitrary: hostileString.map((k) => `nginx.ingress.kubernetes.io/${k}`) },
);

const ingress = fc
  .record({
    name: mostly(pool('ing', 30), 8),
    className: fc.oneof(
      { weight: 6, arbitrary: fc.constant('nginx') },
      { weight: 1, arbitrary: hostileString },
      { weight: 1, arbitrary: fc.constant(undefined) },
    ),
    // Mostly none: one bad annotation leaves the whole Ingress out, and the rest should be tried too.
    annotations: fc.oneof(
      { weight: 3, arbitrary: fc.constant({}) },
      { weight: 2, arbitrary: fc.dictionary(annotationKey, hostileString, { minKeys: 1, maxKeys: 3 }) },
    ),
    rules: fc.array(
      fc.record({
        host: fc.option(host, { nil: undefined }),
        paths: fc.array(fc.record({ path, pathType, backend }), { minLength: 1, maxLength: 3 }),
      }),
      { maxLength: 3 },
    ),
    tls: fc.option(
      fc.array(fc.record({ hosts: fc.array(host, { maxLength: 2 }), secretName: mostly(pool('sec', 6)) }), {
        maxLength: 2,
      }),
      { nil: undefined },
    ),
    defaultBackend: fc.option(backend, { nil: undefined }),
  })
  .map((i) => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name: i.name, namespace: HOSTILE_NAMESPACE, annotations: i.annotations },
    spec: {
      ...(i.className === undefined ? {} : { ingressClassName: i.className }),
      ...(i.defaultBackend ? { defaultBackend: i.defaultBackend } : {}),
      ...(i.tls ? { tls: i.tls } : {}),
      rules: i.rules.map((r) => ({ ...(r.host === undefined ? {} : { host: r.host }), http: { paths: r.paths } })),
    },
  }));

const service = fc
  .record({
    name: mostly(pool('svc', 6), 8),
    type: fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom('ClusterIP', 'ExternalName', 'NodePort') },
      { weight: 1, arbitrary: hostileString },
    ),
    externalName: mostly(fc.constantFrom('backend.example.org', 'localhost')),
    ports: fc.array(
      fc.record({
        name: mostly(fc.constant('http')),
        port: portNumber,
        targetPort: fc.oneof(portNumber, mostly(fc.constant('http'))),
      }),
      { minLength: 1, maxLength: 3 },
    ),
  })
  .map((s) => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: s.name, namespace: HOSTILE_NAMESPACE },
    spec: {
      type: s.type,
      ...(s.type === 'ClusterIP' || s.type === 'NodePort' ? {} : { externalName: s.externalName }),
      ports: s.ports,
    },
  }));

const address = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('127.0.0.1', '10.0.0.1', '::1', 'fe80::1', '192.0.2.1') },
  { weight: 1, arbitrary: fc.ipV4() },
  { weight: 1, arbitrary: fc.ipV6() },
  { weight: 2, arbitrary: hostileString },
);
const endpointSlice = fc
  .record({
    name: mostly(pool('eps', 8), 8),
    service: mostly(pool('svc', 6)),
    addressType: fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom('IPv4', 'IPv6', 'FQDN') },
      { weight: 1, arbitrary: hostileString },
    ),
    ports: fc.array(fc.record({ name: mostly(fc.constant('http')), port: portNumber }), { maxLength: 2 }),
    endpoints: fc.array(
      fc.record({ addresses: fc.array(address, { minLength: 1, maxLength: 2 }), ready: fc.boolean() }),
      { maxLength: 3 },
    ),
  })
  .map((e) => ({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: e.name, namespace: HOSTILE_NAMESPACE, labels: { 'kubernetes.io/service-name': e.service } },
    addressType: e.addressType,
    ports: e.ports,
    endpoints: e.endpoints.map((p) => ({ addresses: p.addresses, conditions: { ready: p.ready } })),
  }));

/** PEM material the Secret arbitrary mixes in: real pairs (for hosts of the pool), set once by the test. */
export const pems: { cert: string; key: string }[] = [];
const pemPart = (part: 'cert' | 'key') =>
  fc.oneof(
    {
      weight: 2,
      arbitrary: fc.integer({ min: 0, max: 7 }).map((i) => pems[i % Math.max(1, pems.length)]?.[part] ?? ''),
    },
    {
      weight: 1,
      arbitrary: hostileString.map((s) => `-----BEGIN CERTIFICATE-----\n${s}\n-----END CERTIFICATE-----\n`),
    },
    { weight: 1, arbitrary: hostileString },
  );
const secret = fc
  .record({
    name: mostly(pool('sec', 6), 8),
    type: fc.oneof(
      { weight: 4, arbitrary: fc.constant('kubernetes.io/tls') },
      { weight: 1, arbitrary: fc.constantFrom('Opaque') },
    ),
    cert: pemPart('cert'),
    key: pemPart('key'),
    extra: fc.option(
      fc.dictionary(
        hostileString.filter((k) => /^[-._a-zA-Z0-9]+$/.test(k)),
        hostileString,
        { maxKeys: 2 },
      ),
      { nil: undefined },
    ),
  })
  .map((s) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    type: s.type,
    metadata: { name: s.name, namespace: HOSTILE_NAMESPACE },
    data: {
      'tls.crt': Buffer.from(s.cert).toString('base64'),
      'tls.key': Buffer.from(s.key).toString('base64'),
      ...Object.fromEntries(Object.entries(s.extra ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
    },
  }));

/**
 * ConfigMap keys whose every valid value leaves plain GETs to the good Ingresses served. Left out:
 * keys where a valid value changes that on purpose (force-ssl-redirect, use-proxy-protocol, worker and connection
 * counts, header buffers, limits) and the two that let Ingress owners write directives by design
 * (allow-snippet-annotations, annotations-risk-level): those are the operator's choice, not an attack.
 */
const SAFE_CONFIG_KEYS = [
  'error-log-level',
  'log-format-upstream',
  'ssl-protocols',
  'ssl-ciphers',
  'ssl-redirect',
  'hsts',
  'hsts-max-age',
  'hsts-include-subdomains',
  'hsts-preload',
  'proxy-body-size',
  'map-hash-bucket-size',
  'server-name-hash-max-size',
  'server-name-hash-bucket-size',
  'http2-max-field-size',
  'http2-max-header-size',
  'use-forwarded-headers',
  'enable-real-ip',
  'forwarded-for-header',
  'proxy-real-ip-cidr',
  'use-gzip',
  'gzip-level',
  'gzip-min-length',
  'gzip-types',
  'load-balance',
  'access-log-path',
  'disable-access-log',
  'allow-cross-namespace-resources',
  'no-such-key',
];
const configMap = (name: { namespace: string; name: string }) =>
  fc
    .dictionary(
      fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom(...SAFE_CONFIG_KEYS) },
        { weight: 1, arbitrary: hostileString.filter((k) => /^[-._a-zA-Z0-9]+$/.test(k)) },
      ),
      hostileString,
      { maxKeys: 3 },
    )
    .map((data) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { ...name }, data }));

/** HostileOp is one write of the bad-input phase. */
export type HostileOp =
  | {
      readonly op: 'write';
      readonly object: Record<string, unknown> & { kind: string; metadata: { name: string; namespace: string } };
    }
  | { readonly op: 'delete'; readonly kind: string; readonly name: string };

/** hostileOps is the arbitrary of one operation: mostly writes of every kind, some deletes. */
export function hostileOps(configMapRef: { namespace: string; name: string }): fc.Arbitrary<HostileOp> {
  const write = (arb: fc.Arbitrary<unknown>) =>
    arb.map((object) => ({ op: 'write' as const, object: object as Extract<HostileOp, { op: 'write' }>['object'] }));
  return fc.oneof(
    { weight: 8, arbitrary: write(ingress) },
    { weight: 3, arbitrary: write(service) },
    { weight: 3, arbitrary: write(endpointSlice) },
    { weight: 3, arbitrary: write(secret) },
    { weight: 1, arbitrary: write(configMap(configMapRef)) },
    {
      weight: 2,
      arbitrary: fc.oneof(
        pool('ing', 30).map((name) => ({ op: 'delete' as const, kind: 'Ingress', name })),
        pool('svc', 6).map((name) => ({ op: 'delete' as const, kind: 'Service', name })),
        pool('eps', 8).map((name) => ({ op: 'delete' as const, kind: 'EndpointSlice', name })),
        pool('sec', 6).map((name) => ({ op: 'delete' as const, kind: 'Secret', name })),
      ),
    },
  );
}
