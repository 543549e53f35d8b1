/**
 * Location profiles (src/render/profile.ts): a location's key is the hash of its text through the real partials with
 * the per-request values replaced, so (a) Ingresses differing only in per-request values share a profile, (b) an
 * annotation that changes a location's directives changes its profile, table-driven over test/fixtures, and (c) no
 * value outside the per-request fields can change what nginx is told without changing the key.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { parseManifests, toSnapshot } from '../../src/manifests/load.js';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions, type BuildOptions } from '../../src/model/build-types.js';
import type { Location, NginxModel } from '../../src/model/nginx-model.js';
import type { KubeObject, Snapshot } from '../../src/model/snapshot.js';
import { loadTemplate } from '../../src/render/load.js';
import { PER_REQUEST_FIELDS, locationProfile, profileCensus } from '../../src/render/profile.js';
import { quote } from '../../src/render/quote.js';
import { annotationGroups, supportedKeys } from '../../src/model/annotations/registry.js';
import { ANNOTATION_PREFIX } from '../../src/model/annotations/types.js';
import { compileLocationRenderer, render } from '../../src/render/render.js';
import { ingress, ingressClass, serviceWithEndpoints, snapshotOf } from '../support/manifests.js';

const FIXTURES = new URL('../fixtures/', import.meta.url).pathname;
const template = await loadTemplate();
const renderLocation = compileLocationRenderer(template.sources);

/** The default mode (Lua balancer, request metrics on), where the router would set the per-request values. */
const DYNAMIC: Partial<BuildOptions> = {
  dynamic: { modules: [], packagePath: '/lua/?.lua', controlSocket: '/run/ia.sock', requestMetrics: true },
};
const MODES: readonly (readonly [string, Partial<BuildOptions>])[] = [
  ['lua', DYNAMIC],
  ['static', {}],
];

const key = (l: Location, model: NginxModel) => locationProfile(l, model, renderLocation).key;
const allLocations = (model: NginxModel) => [model.defaultServer, ...model.servers].flatMap((s) => s.locations);
const serverOf = (model: NginxModel, host: string) => model.servers.find((s) => s.host === host)!;

describe('(a) per-request values share a profile', () => {
  const annotations = {
    'nginx.ingress.kubernetes.io/proxy-body-size': '8m',
    'nginx.ingress.kubernetes.io/proxy-read-timeout': '120',
    'nginx.ingress.kubernetes.io/enable-cors': 'true',
    'nginx.ingress.kubernetes.io/whitelist-source-range': '10.0.0.0/8',
    'nginx.ingress.kubernetes.io/auth-url': 'http://auth.example.com/check',
    'nginx.ingress.kubernetes.io/custom-http-errors': '404,503',
  };
  const snapshot = snapshotOf([
    ingressClass(),
    ...serviceWithEndpoints('web', [{ port: 8080 }], 'team-a'),
    ...serviceWithEndpoints('api', [{ port: 9090 }], 'team-b'),
    ...serviceWithEndpoints('errors', [{ port: 7070 }], 'ingress'),
    ingress('one', { 'one.example.com': [{ path: '/', service: 'web' }] }, { namespace: 'team-a', annotations }),
    ingress(
      'two',
      { 'two.example.org': [{ path: '/shop', service: 'api', port: 'http' }] },
      { namespace: 'team-b', annotations },
    ),
    ingress(
      'three',
      { 'three.example.com': [{ path: '/exact', pathType: 'Exact', service: 'api' }] },
      {
        namespace: 'team-b',
        annotations,
      },
    ),
  ]);

  const withErrors = { ...defaultBuildOptions, defaultBackendService: 'ingress/errors' };

  it.each(MODES)('in %s mode: one profile for hosts, paths, Services, ports, namespaces and names', (_, options) => {
    const { model, problems } = buildModel(snapshot, { ...withErrors, ...options });
    expect(problems).toEqual([]);
    const hosts = ['one.example.com', 'two.example.org', 'three.example.com'];
    // the Ingresses' own locations (a host without `/` also gets the default backend's)
    const locations = hosts.flatMap((h) => serverOf(model, h).locations.filter((l) => l.ingress !== null));
    // `/` is one location; `/shop` is `= /shop` and `/shop/`; `/exact` one
    expect(locations.map((l) => l.match)).toEqual(['/', '/shop', '/shop/', '/exact']);
    // they differ in every per-request value the template prints...
    expect(new Set(locations.map((l) => l.pass?.upstreamName)).size).toBe(2);
    expect(new Set(locations.map((l) => l.externalAuth?.location)).size).toBe(4);
    expect(new Set(locations.map((l) => l.info?.serviceName)).size).toBe(2);
    expect(new Set(locations.map((l) => renderLocation(l, model))).size).toBe(4);
    // ...and share one profile
    expect(new Set(locations.map((l) => key(l, model))).size).toBe(1);
  });

  it('a different value of the same annotation is a different profile', () => {
    const other = { ...annotations, 'nginx.ingress.kubernetes.io/proxy-body-size': '9m' };
    const { model } = buildModel(
      {
        ...snapshot,
        ingresses: [
          ...snapshot.ingresses,
          ingress(
            'four',
            { 'four.example.com': [{ path: '/', service: 'web' }] },
            {
              namespace: 'team-a',
              annotations: other,
            },
          ) as Snapshot['ingresses'][number],
        ],
      },
      { ...withErrors, ...DYNAMIC },
    );
    const [one, four] = ['one.example.com', 'four.example.com'].map((h) => serverOf(model, h).locations[0]!);
    expect(key(one!, model)).not.toBe(key(four!, model));
  });
});

/**
 * comparable is a location's real text with the per-request values spelt as nginx.conf spells them (quoted) blanked,
 * and its `location … {` line: an oracle independent of profileLocation, over the text render() writes.
 */
function comparable(l: Location, model: NginxModel): string {
  let text = renderLocation(l, model).replace(/^\s*location [^\n]*\{\n/, '');
  const blank = (value: string | null | undefined, as = '*') => {
    if (value) text = text.replaceAll(quote(value), quote(as));
  };
  if (l.pass) blank(l.pass.url, `${l.pass.url.split('://')[0]}://*`);
  for (const value of [
    l.route?.id,
    l.pass?.upstreamName,
    l.pass?.canary,
    l.info?.namespace,
    l.info?.ingressName,
    l.info?.serviceName,
    l.info?.servicePort,
    l.externalAuth?.location,
    l.externalAuth?.signinLocation,
  ])
    blank(value);
  return text;
}

const fixtureNames = (await readdir(FIXTURES, { withFileTypes: true }))
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort();

async function fixture(name: string): Promise<{ objects: KubeObject[]; options: Partial<BuildOptions> }> {
  const objects = parseManifests(await readFile(join(FIXTURES, name, 'input.yaml'), 'utf8'));
  const expected = (parse(await readFile(join(FIXTURES, name, 'expected.yaml'), 'utf8')) ?? {}) as {
    options?: Partial<BuildOptions>;
  };
  return { objects, options: expected.options ?? {} };
}

interface IngressObject extends KubeObject {
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  spec: { rules?: { host?: string }[]; tls?: { hosts?: string[] }[] };
}

/**
 * twinOf is an Ingress without its annotations on hosts of its own (`twin-<n>-<host>.profile.test`), so its
 * locations are the original's as they would be without the annotations.
 */
function twinOf(ing: IngressObject, n: number): IngressObject {
  const host = (h: string | undefined) => `twin-${n}-${(h || 'default').replace(/^\*\./, 'any.')}.profile.test`;
  const { annotations: _, ...metadata } = ing.metadata;
  return {
    ...ing,
    metadata: { ...metadata, name: `${ing.metadata.name}-twin` },
    spec: {
      ...ing.spec,
      rules: ing.spec.rules?.map((r) => ({ ...r, host: host(r.host) })),
      tls: ing.spec.tls?.map((t) => ({ ...t, hosts: t.hosts?.map(host) })),
    },
  };
}

/** The registry's groups that never change a location's directives, and why (the rest must, in some fixture). */
const NO_LOCATION_EFFECT: Readonly<Record<string, string>> = {
  LoadBalancing: "the balancing method is the upstream's (the Lua balancer reads it), not the location's",
  Canary: 'a canary Ingress has no locations: the router picks its upstream (excluded from the twins)',
  SSLPassthrough: "TLS passthrough is the stream block's: such a host keeps its own server",
};

describe.each(MODES)('(b) annotations make profiles, over test/fixtures, in %s mode', (_, mode) => {
  let paired = 0;
  let differing = 0;
  /** the annotation groups some fixture Ingress, annotated from that group alone, changed a location's profile with */
  const changedBy = new Set<string>();
  it.each(fixtureNames)('%s: key equal exactly when the directives are', async (name) => {
    const { objects, options } = await fixture(name);
    const annotated = objects.filter(
      (o): o is IngressObject =>
        o.kind === 'Ingress' &&
        Object.keys((o as IngressObject).metadata.annotations ?? {}).length > 0 &&
        (o as IngressObject).metadata.annotations?.['nginx.ingress.kubernetes.io/canary'] !== 'true',
    );
    const twins = annotated.map(twinOf);
    const { model } = buildModel(toSnapshot([...objects, ...twins]), { ...defaultBuildOptions, ...options, ...mode });
    const of = (ing: IngressObject) => {
      const id = `${ing.metadata.namespace ?? 'default'}/${ing.metadata.name}`;
      return allLocations(model).filter((l) => l.ingress === id);
    };
    annotated.forEach((ing, i) => {
      const twin = of(twins[i]!);
      for (const l of of(ing)) {
        const t = twin.find((x) => x.modifier === l.modifier && x.match === l.match);
        if (!t) continue;
        paired++;
        const same = comparable(l, model) === comparable(t, model);
        if (!same) differing++;
        const groups = new Set(Object.keys(ing.metadata.annotations ?? {}).map(groupOf));
        // custom-http-errors needs default-backend's Service (or the flag's) to change anything: counted as a pair
        const pair = groups.size === 2 && groups.has('CustomHTTPErrors') && groups.has('DefaultBackend');
        if (!same && (groups.size === 1 || pair)) for (const g of groups) changedBy.add(g);
        expect({ match: l.match, sameKey: key(l, model) === key(t, model) }).toEqual({ match: l.match, sameKey: same });
      }
    });
  });
  it('compared enough locations, and every annotation group that can changed some', () => {
    expect(paired).toBeGreaterThan(100);
    expect(differing).toBeGreaterThan(60);
    // spans are made by the Lua balancer's phases: without it (static mode) enable-opentelemetry changes nothing
    const none = mode === DYNAMIC ? NO_LOCATION_EFFECT : { ...NO_LOCATION_EFFECT, OpenTelemetry: 'Lua only' };
    const missing = annotationGroups.map((g) => g.name).filter((g) => !changedBy.has(g) && !(g in none));
    expect(missing).toEqual([]);
  });
});

describe.each(MODES)('the location renderer writes what render() writes, in %s mode', (_, mode) => {
  it.each(fixtureNames)("%s: each location's text is in nginx.conf as it is", async (name) => {
    const { objects, options } = await fixture(name);
    const { model } = buildModel(toSnapshot(objects), { ...defaultBuildOptions, ...options, ...mode });
    const conf = render(model, template);
    for (const l of allLocations(model)) expect(conf).toContain(renderLocation(l, model));
  });
});

const GROUP_OF = new Map(
  supportedKeys.flatMap(({ group, key }) => [key.key, ...(key.aliases ?? [])].map((name) => [name, group] as const)),
);
/** groupOf names the registry group of an annotation (`?` for one the registry does not know). */
const groupOf = (annotation: string) => GROUP_OF.get(annotation.slice(ANNOTATION_PREFIX.length)) ?? '?';

type Leaf = { readonly path: readonly (string | number)[]; readonly value: string | number | boolean };

function leaves(value: unknown, path: (string | number)[] = []): Leaf[] {
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return [{ path, value }];
  if (Array.isArray(value)) return value.flatMap((v, i) => leaves(v, [...path, i]));
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => leaves(v, [...path, k]));
  return [];
}

function withLeaf(value: unknown, [head, ...rest]: readonly (string | number)[], leaf: unknown): unknown {
  if (head === undefined) return leaf;
  if (Array.isArray(value)) return value.map((v, i) => (i === head ? withLeaf(v, rest, leaf) : v));
  const record = value as Record<string, unknown>;
  return { ...record, [head]: withLeaf(record[head as string], rest, leaf) };
}

const mutated = (v: Leaf['value']) => (typeof v === 'string' ? `${v}x` : typeof v === 'number' ? v + 1 : !v);
const perRequest = new Set<string>(PER_REQUEST_FIELDS);

describe.each(MODES)('(c) every field of every fixture location, changed alone, in %s mode', (_, mode) => {
  it.each(fixtureNames)(
    '%s: a per-request field keeps the key; any other that changes the text changes it',
    async (name) => {
      const { objects, options } = await fixture(name);
      const { model } = buildModel(toSnapshot(objects), { ...defaultBuildOptions, ...options, ...mode });
      for (const l of allLocations(model)) {
        const before = { key: key(l, model), text: renderLocation(l, model) };
        for (const leaf of leaves(l)) {
          const field = leaf.path.filter((p) => typeof p === 'string').join('.');
          const changed = withLeaf(l, leaf.path, mutated(leaf.value)) as Location;
          let text: string;
          try {
            text = renderLocation(changed, model);
          } catch {
            continue; // a location the model cannot make (cors' anyOrigin off without its preflight variable)
          }
          const after = { key: key(changed, model), text };
          if (perRequest.has(field))
            expect({ field, sameKey: after.key === before.key }).toEqual({ field, sameKey: true });
          else if (after.text !== before.text)
            expect({ field, sameKey: after.key === before.key }).toEqual({ field, sameKey: false });
        }
      }
    },
  );
});

describe('(c) hostile values', () => {
  const build = (annotations: Record<string, string>[]) =>
    buildModel(
      snapshotOf([
        ingressClass(),
        ...serviceWithEndpoints('web', [{ port: 8080 }]),
        ...annotations.map((a, i) =>
          ingress(`i${i}`, { [`h${i}.example.com`]: [{ path: '/', service: 'web' }] }, { annotations: a }),
        ),
      ]),
      { ...defaultBuildOptions, ...DYNAMIC },
    ).model;

  // Values no validator lets through, set on the model directly: the key must still tell them apart.
  const base = () =>
    serverOf(
      build([
        {
          'nginx.ingress.kubernetes.io/proxy-redirect-from': 'http://a',
          'nginx.ingress.kubernetes.io/proxy-redirect-to': 'http://b',
        },
      ]),
      'h0.example.com',
    ).locations[0]!;
  const model = build([{}]);
  it.each([
    [
      'proxy_redirect `a b` `c` vs `a` `b c`',
      ['proxy', 'redirect'],
      { from: 'a b', to: 'c' },
      { from: 'a', to: 'b c' },
    ],
    [
      'a snippet directive of args [`a b`] vs [`a`, `b`]',
      ['snippet'],
      [{ name: 'add_header', args: ['a b'] }],
      [{ name: 'add_header', args: ['a', 'b'] }],
    ],
  ] as const)('%s are different profiles', (_, path, one, two) => {
    const l = base();
    const a = withLeaf(l, path, one) as Location;
    const b = withLeaf(l, path, two) as Location;
    expect(renderLocation(a, model)).not.toBe(renderLocation(b, model));
    expect(key(a, model)).not.toBe(key(b, model));
  });

  it('a per-request value never reaches the profile text, whatever it holds', () => {
    const l = base();
    const hostile = '/x"; return 200; # {';
    const a = {
      ...l,
      match: hostile,
      pass: l.pass && { ...l.pass, upstreamName: hostile, url: `http://${hostile}` },
      route: l.route && { ...l.route, id: hostile },
    };
    expect(renderLocation(a, model)).toContain('return 200; #');
    const profile = locationProfile(a, model, renderLocation);
    expect(profile.text).not.toContain('return 200');
    expect(profile.key).toBe(key(l, model));
  });

  it('an annotation value spelt like a placeholder is not the placeholder', () => {
    const model = build([
      { 'nginx.ingress.kubernetes.io/x-forwarded-prefix': '/ia-profile:match' },
      { 'nginx.ingress.kubernetes.io/x-forwarded-prefix': '/other' },
    ]);
    const [a, b] = ['h0.example.com', 'h1.example.com'].map((h) => serverOf(model, h).locations[0]!);
    expect(a!.proxyHeaders?.forwardedPrefix).toBe('/ia-profile:match');
    expect(key(a!, model)).not.toBe(key(b!, model));
  });
});

describe('profileCensus', () => {
  it('counts every location once and groups equal profiles', () => {
    const { model } = buildModel(
      snapshotOf([
        ingressClass(),
        ...serviceWithEndpoints('web', [{ port: 8080 }]),
        ingress('a', {
          'a.example.com': [
            { path: '/', service: 'web' },
            { path: '/api', service: 'web' },
          ],
        }),
        ingress(
          'b',
          { 'b.example.com': [{ path: '/', service: 'web' }] },
          {
            annotations: { 'nginx.ingress.kubernetes.io/proxy-body-size': '1m' },
          },
        ),
      ]),
      { ...defaultBuildOptions, ...DYNAMIC },
    );
    const census = profileCensus(model, renderLocation);
    // the default server's `/` (404), a's three, b's one
    expect(census.locations).toBe(5);
    expect([...census.profiles.values()].map((p) => p.locations).sort()).toEqual([1, 1, 3]);
  });
});
