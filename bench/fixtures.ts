import { buildModel } from '../src/model/build.js';
import { defaultBuildOptions } from '../src/model/build-types.js';
import { emptySnapshot, type Snapshot } from '../src/model/snapshot.js';
import { compileTemplate, render, type NginxTemplate } from '../src/render/render.js';
import type { KeyPair } from '../src/tls/issue.js';
import { ingressClass } from '../test/support/manifests.js';

/**
 * ANNOTATION_MIX is what the annotated mix gives Ingress i: entry i % length (about 40 % none). Values repeat, as
 * teams copy them; limit-rps names a zone per Ingress and rewrite-target a pattern per path, so those stay apart.
 */
export const ANNOTATION_MIX: readonly Record<string, string>[] = [
  {},
  {},
  {},
  {},
  { 'proxy-body-size': '8m' },
  { 'proxy-body-size': '64m' },
  { 'proxy-read-timeout': '300', 'proxy-send-timeout': '300' },
  { 'enable-cors': 'true' },
  { 'whitelist-source-range': '10.0.0.0/8' },
  { 'ssl-redirect': 'false' },
  { 'auth-url': 'http://auth.example.com/check' },
  { 'proxy-buffering': 'on', 'proxy-body-size': '8m' },
  { 'limit-rps': '20' },
  { 'rewrite-target': '/' },
  { 'backend-protocol': 'HTTPS' },
  { affinity: 'cookie' },
];

/** annotationsOf is Ingress i's annotations in the annotated mix, with their ingress-nginx prefix. */
export const annotationsOf = (i: number): Record<string, string> =>
  Object.fromEntries(
    Object.entries(ANNOTATION_MIX[i % ANNOTATION_MIX.length]!).map(([k, v]) => [`nginx.ingress.kubernetes.io/${k}`, v]),
  );

/** ClusterOptions vary generateCluster's cluster. */
export interface ClusterOptions {
  /** give Ingress i annotationsOf(i): a realistic mix instead of none */
  readonly annotated?: boolean;
  /** every Service's one endpoint, a real backend, instead of 3 addresses nobody listens on */
  readonly endpoint?: { readonly ip: string; readonly port: number };
}

/**
 * generateCluster makes N Ingresses as the scale benchmark describes them: each with its own
 * Service and EndpointSlice of 3 endpoints, 2 paths, and every 10th with TLS (its own Secret
 * holding the same wildcard certificate, so each still costs a parse and a file).
 */
export function generateCluster(n: number, wildcard: KeyPair, options: ClusterOptions = {}): Snapshot {
  const ns = (i: number) => `team-${i % 50}`;
  const crt = Buffer.from(wildcard.certPem).toString('base64');
  const key = Buffer.from(wildcard.keyPem).toString('base64');
  const snapshot = {
    ingressClasses: [{ metadata: { name: 'nginx' }, spec: { controller: 'k8s.io/ingress-nginx' } }],
    ingresses: [] as object[],
    services: [] as object[],
    endpointSlices: [] as object[],
    secrets: [] as object[],
    configMaps: [],
  };
  for (let i = 0; i < n; i++) {
    const name = `app-${i}`;
    const host = `${name}.bench.local`;
    const tls = i % 10 === 0;
    snapshot.services.push({
      metadata: { namespace: ns(i), name },
      spec: { ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
    });
    snapshot.endpointSlices.push({
      metadata: { namespace: ns(i), name: `${name}-x1`, labels: { 'kubernetes.io/service-name': name } },
      addressType: 'IPv4',
      ports: [{ name: 'http', port: options.endpoint?.port ?? 8080 }],
      endpoints: options.endpoint
        ? [{ addresses: [options.endpoint.ip], conditions: { ready: true } }]
        : [1, 2, 3].map((k) => ({
            addresses: [`10.${(i >> 8) & 255}.${i & 255}.${k}`],
            conditions: { ready: true },
          })),
    });
    if (tls)
      snapshot.secrets.push({
        type: 'kubernetes.io/tls',
        metadata: { namespace: ns(i), name: `${name}-tls` },
        data: { 'tls.crt': crt, 'tls.key': key },
      });
    snapshot.ingresses.push({
      metadata: {
        namespace: ns(i),
        name,
        creationTimestamp: new Date(1_700_000_000_000 + i * 1000).toISOString(),
        ...(options.annotated ? { annotations: annotationsOf(i) } : {}),
      },
      spec: {
        ingressClassName: 'nginx',
        ...(tls ? { tls: [{ hosts: [host], secretName: `${name}-tls` }] } : {}),
        rules: [
          {
            host,
            http: {
              paths: [
                { path: '/', pathType: 'Prefix', backend: { service: { name, port: { name: 'http' } } } },
                { path: '/api', pathType: 'Prefix', backend: { service: { name, port: { number: 80 } } } },
              ],
            },
          },
        ],
      },
    });
  }
  return snapshot as unknown as Snapshot;
}

/**
 * freshTemplate compiles `template`'s sources anew and warms it on an empty cluster, for timing a
 * full render: a compiled template keeps partial texts per object, and Handlebars compiles
 * lazily, on the first render.
 */
export function freshTemplate(template: NginxTemplate): NginxTemplate {
  const fresh = compileTemplate(template.sources);
  render(buildModel(emptySnapshot, defaultBuildOptions).model, fresh);
  return fresh;
}

/**
 * snapshotManifests is a snapshot as the API objects that make it, with the IngressClass its Ingresses name, to seed
 * the test API server (the API server sets creation timestamps itself).
 */
export function snapshotManifests(snapshot: Snapshot): object[] {
  const typed = (apiVersion: string, kind: string, objects: readonly object[]) =>
    objects.map((o) => ({ apiVersion, kind, ...o }));
  return [
    ingressClass(),
    ...typed('v1', 'Service', snapshot.services),
    ...typed('discovery.k8s.io/v1', 'EndpointSlice', snapshot.endpointSlices),
    ...typed('v1', 'Secret', snapshot.secrets),
    ...typed(
      'networking.k8s.io/v1',
      'Ingress',
      snapshot.ingresses.map((i) => ({ ...i, metadata: { ...i.metadata, creationTimestamp: undefined } })),
    ),
  ];
}
