/**
 * Hostile strings in every field convert reads: it never throws, every object it prints reads back through the
 * Gateway API readers with no refused value (so the model would never have to refuse what convert copied), and no
 * string it prints holds a character the Ingress model's validators keep out of nginx (quotes, `$`, `;`, braces, `#`,
 * `\`, controls), but for RegularExpression paths, which passed the safe regex subset; each line it reports is one
 * line of printable text.
 */
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { ANNOTATION_PREFIX } from '../../src/model/annotations/types.js';
import { convertIngresses, unexpressedLine } from '../../src/convert/convert.js';
import { readGateway, readHTTPRoute, readReferenceGrant } from '../../src/model/gateway/index.js';
import type { Snapshot } from '../../src/model/snapshot.js';
import { CPU_BOUND_MS } from '../support/timeouts.js';

const HOSTILE = [
  '',
  ' ',
  '/',
  '/a;b',
  '/a b',
  '/$uri',
  '/a"b',
  "/a'b",
  '/a{b}',
  '/#x',
  '/a\\b',
  '/a\nb',
  '/a\u0000b',
  'a.example.com',
  '*.example.com',
  'A.example.com',
  '1.2.3.4',
  'x.example.com:8080',
  'http://a.example.com/p',
  'https://a.example.com/p?q=1',
  'https://$host/',
  'https://a.example.com/a b',
  '/api(/|$)(.*)',
  '/$2',
  '/$1/x',
  '/items/[0-9]+$',
  '(a|b)',
  '/a|/b',
  '/a{99999}',
  'true',
  'false',
  'maybe',
  '301',
  '308',
  '305',
  '100',
  '99999999999',
  '1d',
  '5m',
  'X-Canary',
  'x_canary',
  'always',
  'default/headers',
  'other/ns/x',
  'web',
  'Web',
  'web_1',
  'http',
  '80',
];

const text = fc.oneof(
  { arbitrary: fc.constantFrom(...HOSTILE), weight: 3 },
  { arbitrary: fc.string({ maxLength: 12 }), weight: 1 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 8 }), weight: 1 },
);
/** mostly one of the values that convert turns into output, else anything. */
const usually = <T>(...values: T[]) =>
  fc.oneof({ arbitrary: fc.constantFrom(...values), weight: 4 }, { arbitrary: text, weight: 1 });

/** Per key, values that pass its validator (so the output holds them) beside the hostile ones. */
const VALUES: Record<string, string[]> = {
  'rewrite-target': ['/', '/$2', '/index', '/a/$1'],
  'use-regex': ['true', 'false'],
  'app-root': ['/app', '/'],
  'ssl-redirect': ['true', 'false'],
  'force-ssl-redirect': ['true', 'false'],
  'permanent-redirect': ['https://a.example.com/p', 'http://b.example.com:8080/', 'https://a.example.com/p?q=1'],
  'permanent-redirect-code': ['301', '308', '305'],
  'temporal-redirect': ['https://t.example.com/x'],
  'temporal-redirect-code': ['302', '307'],
  'upstream-vhost': ['internal.example.com', '10.0.0.1', 'x.example.com:8080'],
  'x-forwarded-prefix': ['/shop', '/'],
  'custom-headers': ['default/headers', 'headers'],
  'proxy-read-timeout': ['60', '5m', '1d'],
  'proxy-send-timeout': ['30', '500ms'],
  canary: ['true', 'false'],
  'canary-weight': ['0', '20', '100'],
  'canary-by-header': ['X-Canary'],
  'canary-by-header-value': ['yes', 'always'],
  'auth-url': ['http://auth.example.com/'],
};

const pathArb = fc.record({
  path: usually('/', '/api', '/api/', '/api(/|$)(.*)', '/items/[0-9]+$', '/x/.+'),
  pathType: usually('Exact', 'Prefix', 'ImplementationSpecific'),
  service: usually('web', 'api'),
  port: fc.oneof(fc.constantFrom(80, 'http', 8080), fc.integer({ min: -1, max: 70000 }), text),
});
const annotationsArb = fc
  .subarray(Object.keys(VALUES), { maxLength: 6 })
  .chain((keys) => fc.tuple(...keys.map((k) => usually(...VALUES[k]!).map((v) => [k, v] as const))));
const ingressArb = fc.record({
  name: usually('a', 'b', 'c'),
  host: usually('a.example.com', '*.w.example.com', ''),
  paths: fc.array(pathArb, { maxLength: 4 }),
  annotations: annotationsArb,
  tls: fc.array(fc.record({ host: usually('a.example.com', '*.w.example.com'), secretName: usually('tls') }), {
    maxLength: 2,
  }),
  className: usually('nginx'),
  defaultBackend: fc.option(usually('web')),
});

/** forbidden finds a printed string with a character the model's validators never let through. */
function forbidden(value: unknown, path: string, regex: boolean): string | null {
  if (typeof value === 'string')
    return !regex && /[$"'\\;{}#\u0000-\u001f\u007f]/.test(value) ? `${path}: ${JSON.stringify(value)}` : null;
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) {
      const found = forbidden(v, `${path}[${i}]`, false);
      if (found) return found;
    }
    return null;
  }
  if (typeof value === 'object' && value !== null) {
    const isRegex = (value as { type?: unknown }).type === 'RegularExpression';
    for (const [k, v] of Object.entries(value)) {
      const found = forbidden(v, `${path}.${k}`, isRegex && k === 'value');
      if (found) return found;
    }
  }
  return null;
}

it(
  'prints nothing the readers refuse and no character the validators keep out, whatever the Ingresses hold',
  () => {
    fc.assert(
      fc.property(
        fc.array(ingressArb, { minLength: 1, maxLength: 3 }),
        fc.dictionary(text, text),
        (ingresses, headers) => {
          const snapshot: Snapshot = {
            ingresses: ingresses.map((i, n) => ({
              apiVersion: 'networking.k8s.io/v1',
              kind: 'Ingress',
              metadata: {
                name: i.name,
                namespace: 'default',
                creationTimestamp: `2026-01-0${n + 1}T00:00:00Z`,
                annotations: Object.fromEntries(i.annotations.map(([k, v]) => [ANNOTATION_PREFIX + k, v])),
              },
              spec: {
                ingressClassName: i.className,
                ...(i.defaultBackend === null
                  ? {}
                  : { defaultBackend: { service: { name: i.defaultBackend, port: { number: 80 } } } }),
                tls: i.tls.map((t) => ({ hosts: [t.host], secretName: t.secretName })),
                rules: [
                  {
                    host: i.host,
                    http: {
                      paths: i.paths.map((p) => ({
                        path: p.path,
                        pathType: p.pathType,
                        backend: {
                          service: {
                            name: p.service,
                            port: typeof p.port === 'number' ? { number: p.port } : { name: p.port },
                          },
                        },
                      })),
                    },
                  },
                ],
              },
            })),
            ingressClasses: [],
            services: [
              { metadata: { name: 'web', namespace: 'default' }, spec: { ports: [{ name: 'http', port: 8080 }] } },
            ],
            endpointSlices: [],
            secrets: [],
            configMaps: [{ metadata: { name: 'headers', namespace: 'default' }, data: headers }],
          };
          const { objects, unexpressed } = convertIngresses(snapshot);
          // Each report is one line of printable text, whatever the Ingress held.
          for (const u of unexpressed) expect(unexpressedLine(u)).toMatch(/^[^\u0000-\u001f\u007f]*$/);
          for (const object of objects) {
            if (object.kind === 'Gateway')
              for (const l of readGateway(object)!.listeners) expect(l.invalid, JSON.stringify(object)).toEqual([]);
            if (object.kind === 'HTTPRoute') expect(readHTTPRoute(object)!.invalid, JSON.stringify(object)).toEqual([]);
            if (object.kind === 'ReferenceGrant') expect(readReferenceGrant(object)).not.toBeNull();
            expect(forbidden(object, object.kind ?? '', false)).toBeNull();
          }
        },
      ),
      { numRuns: 300 },
    );
  },
  CPU_BOUND_MS,
);
