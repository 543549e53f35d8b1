/**
 * Routes as data, incrementally (src/sync/shared-server.ts): a sync looks only at the servers whose object changed
 * since the last one. Differential: random sequences of Ingress changes (fast-check, fixed seed) go through the
 * controller's path twice, once as a sync runs it (incremental build, the same split, SharedServer and RenderedText
 * from one change to the next), once from scratch at every step (a fresh build, split and template; a SharedServer
 * that saw the same models, so the same profiles are kept). At every step both give the same nginx.conf text, the
 * same table hosts, profiles and version, and the same place for every host; the version is the hosts' alone (a
 * SharedServer that never saw the earlier models gives it too), so it changes exactly when the hosts do. The served
 * Ingresses (ServedIngresses, counted for the changed servers) are servedIngresses' at every step too.
 */
import fc from 'fast-check';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ServedIngresses, servedIngresses } from '../../src/kube/status.js';
import { BuildMemo, buildModel } from '../../src/model/build.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import { renderedHosts } from '../../src/model/served-from.js';
import type { Snapshot } from '../../src/model/snapshot.js';
import { nginxBinary } from '../../src/nginx/binary.js';
import { checkLua } from '../../src/nginx/lua.js';
import { loadTemplate } from '../../src/render/load.js';
import { compileTemplate, render, RenderedText } from '../../src/render/render.js';
import { DynamicSplit } from '../../src/sync/dynamic-split.js';
import { SharedServer, type SharedServing } from '../../src/sync/shared-server.js';
import { issueCertificate } from '../../src/tls/issue.js';
import { ingress, ingressClass, serviceWithEndpoints, snapshotOf, tlsSecret } from '../support/manifests.js';

const template = await loadTemplate();
/** the reference's own compiled template: it keeps no text of the incremental side's objects */
const referenceTemplate = compileTemplate(template.sources);
const scratch = await mkdtemp(join(tmpdir(), 'ia-shared-incremental-'));
afterAll(() => rm(scratch, { recursive: true, force: true }));
const lua = await checkLua(nginxBinary(), scratch);
if (!lua.ok) throw new Error(`the Lua module is needed here: ${lua.why}`);
const options = {
  ...defaultBuildOptions,
  configMap: 'ingress-nginx/ingress-nginx-controller',
  dynamic: { ...lua.settings, requestMetrics: true, routesAsData: true },
};
const certificate = await issueCertificate({ commonName: '*.t.test', dnsNames: ['*.t.test', '*.w.test', 'w.test'] });

/** the ConfigMap: server-snippet allowed, so a host can keep its own server for it */
const settings = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'ingress-nginx-controller', namespace: 'ingress-nginx' },
  data: { 'allow-snippet-annotations': 'true', 'annotations-risk-level': 'Critical' },
};
/** every other object: the same objects at every step, as the watchers' caches hand them over */
const base = snapshotOf([
  ingressClass(),
  ...serviceWithEndpoints('web', [{ port: 8080 }]),
  ...serviceWithEndpoints('api', [{ port: 8081 }, { port: 8082 }]),
  ...serviceWithEndpoints('errors', [{ port: 8083 }]),
  tlsSecret('tls', certificate.certPem, certificate.keyPem),
  settings,
]);

/** hosts, wildcards among them (a wildcard with its own server keeps the hosts it covers out of the shared server) */
const HOSTS = ['a.t.test', 'b.t.test', 'c.t.test', '*.t.test', 'a.w.test', 'b.w.test', '*.w.test', 'w.test'];
const PATHS = [
  { path: '/' },
  { path: '/api', service: 'api' },
  { path: '/v1', pathType: 'Exact' },
  { path: '/files/(.*)', pathType: 'ImplementationSpecific' },
] as const;
/** annotations: repeated values share profiles; some make a host keep its own server; some name maps, zones, errors */
const ANNOTATIONS: readonly Record<string, string>[] = [
  {},
  {},
  { 'proxy-body-size': '8m' },
  { 'proxy-body-size': '64m' },
  { 'proxy-read-timeout': '300' },
  { 'enable-cors': 'true', 'cors-allow-origin': 'https://a.example.com' },
  { 'enable-cors': 'true', 'cors-allow-origin': 'https://b.example.com' },
  { 'limit-rps': '5' },
  { 'auth-url': 'http://auth.example.com/check' },
  { 'rewrite-target': '/$1', 'use-regex': 'true' },
  { 'ssl-redirect': 'false' },
  { 'custom-http-errors': '404,503', 'default-backend': 'errors' },
  { 'server-snippet': 'add_header X-Own 1;' },
  { canary: 'true', 'canary-weight': '30' },
];

interface Spec {
  readonly hosts: readonly number[];
  readonly paths: readonly number[];
  readonly annotations: number;
  readonly tls: boolean;
}

type Step = { kind: 'put'; name: number; spec: Spec } | { kind: 'delete'; name: number } | { kind: 'same' };

const spec = fc.record({
  hosts: fc.uniqueArray(fc.nat(HOSTS.length - 1), { minLength: 1, maxLength: 2 }),
  paths: fc.uniqueArray(fc.nat(PATHS.length - 1), { minLength: 1, maxLength: 3 }),
  annotations: fc.nat(ANNOTATIONS.length - 1),
  tls: fc.boolean(),
});
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('put' as const), name: fc.nat(9), spec }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), name: fc.nat(9) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'same' as const }) },
);

function manifest(name: number, { hosts, paths, annotations, tls }: Spec) {
  const rules = Object.fromEntries(hosts.map((h) => [HOSTS[h]!, paths.map((p) => ({ service: 'web', ...PATHS[p]! }))]));
  const prefixed = Object.fromEntries(
    Object.entries(ANNOTATIONS[annotations]!).map(([k, v]) => [`nginx.ingress.kubernetes.io/${k}`, v]),
  );
  return ingress(`ing-${name}`, rules, {
    annotations: prefixed,
    ...(tls ? { tls: [{ hosts: hosts.map((h) => HOSTS[h]!), secretName: 'tls' }] } : {}),
  });
}

/** what the comparisons read of a sync: the text, the table, where each host is served from */
function outcome(sharing: SharedServing, text: string) {
  return {
    text,
    hosts: [...(sharing.table?.hosts ?? [])].sort(([a], [b]) => (a < b ? -1 : 1)),
    profiles: [...(sharing.table?.profiles ?? [])].sort(),
    version: sharing.table?.version ?? null,
    served: [...sharing.served].sort(([a], [b]) => (a < b ? -1 : 1)),
  };
}

/** run applies the steps both ways and checks each step's outcomes equal; it gives the incremental outcomes. */
function run(steps: readonly Step[]) {
  const incremental = { memo: new BuildMemo(), split: new DynamicSplit(), shared: new SharedServer() };
  const text = new RenderedText();
  const served = new ServedIngresses();
  const reference = new SharedServer();
  const ingresses = new Map<number, object>();
  let snapshot: Snapshot = base;
  const outcomes: ReturnType<typeof outcome>[] = [];
  for (const s of steps) {
    if (s.kind === 'put') ingresses.set(s.name, manifest(s.name, s.spec));
    else if (s.kind === 'delete') ingresses.delete(s.name);
    if (s.kind !== 'same') snapshot = { ...base, ingresses: [...ingresses.values()] as Snapshot['ingresses'] };

    const built = buildModel(snapshot, options, incremental.memo);
    const split = incremental.split.split(built.model).model;
    const sharing = incremental.shared.share(split, template.sources, incremental.memo.view?.baseConfig)!;
    const now = outcome(sharing, text.render(sharing.model, template));
    // the served Ingresses (status), counted for the changed servers only
    expect(served.of(split)).toEqual([...servedIngresses(split)].sort());

    const freshMemo = new BuildMemo();
    const fresh = new DynamicSplit().split(buildModel(snapshot, options, freshMemo).model).model;
    const scratchSharing = reference.share(fresh, template.sources, freshMemo.view?.baseConfig)!;
    const expected = outcome(scratchSharing, render(scratchSharing.model, referenceTemplate));
    expect(now).toEqual(expected);
    // where each host is served from is renderedHosts' answer for the model
    expect(now.served).toEqual([...renderedHosts(split)].sort(([a], [b]) => (a < b ? -1 : 1)));
    // the version is the hosts' alone: a SharedServer that never saw the earlier models gives the same
    const alone = new SharedServer().share(fresh, template.sources, freshMemo.view?.baseConfig)!;
    expect(alone.table?.version).toBe(now.version);
    outcomes.push(now);
  }
  return outcomes;
}

describe('SharedServer looks only at what changed, and answers as from scratch', () => {
  it('random Ingress changes: the same nginx.conf, table and places as from scratch at every step', () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 4, maxLength: 18 }), (steps) => {
        const outcomes = run(steps);
        // the version changes exactly when the hosts do
        for (let i = 0; i < outcomes.length; i++)
          for (let j = 0; j < i; j++)
            expect(outcomes[i]!.version === outcomes[j]!.version).toBe(
              JSON.stringify(outcomes[i]!.hosts) === JSON.stringify(outcomes[j]!.hosts),
            );
      }),
      { seed: 29, numRuns: 30 },
    );
  }, 180_000);

  const put = (name: number, hosts: number[], annotations: number, paths = [0]): Step => ({
    kind: 'put',
    name,
    spec: { hosts, paths, annotations, tls: false },
  });
  it.each([
    // a wildcard with its own server (a snippet) takes the hosts it covers, then gives them back
    [
      'a wildcard takes its hosts and gives them back',
      [put(0, [4], 0), put(1, [6], 12), put(1, [6], 0), put(2, [5], 2)],
    ],
    ['a wildcard goes while its host changes', [put(0, [4], 0), put(1, [6], 12), { kind: 'delete', name: 1 }]],
    ['a host moves to its own server and back', [put(0, [0], 0), put(0, [0], 12), put(0, [0], 2), put(0, [0], 0)]],
    [
      'error locations counted per host',
      [put(0, [0], 11), put(1, [1], 11), { kind: 'delete', name: 0 }, put(1, [1], 0)],
    ],
    ['nothing changed', [put(0, [0, 1], 5), { kind: 'same' }, { kind: 'same' }]],
  ] as [string, Step[]][])('%s', (_what, steps) => {
    run(steps);
  });

  it('the wildcard case is one: its hosts leave the shared server and come back', () => {
    const [, taken, given] = run([put(0, [4], 0), put(1, [6], 12), put(1, [6], 0)]);
    const place = (o: typeof taken, host: string) => o!.served.find(([h]) => h === host)?.[1];
    expect(place(taken, '*.w.test')).toBe('server-snippet');
    expect(place(taken, 'a.w.test')).toBe('a wildcard host with its own server covers it');
    expect(place(given, 'a.w.test')).toBe('shared');
    expect(given!.hosts.map(([h]) => h)).toContain('a.w.test');
  });

  it('a sync that changed nothing hands back the same table and nginx.conf parts', () => {
    const memo = new BuildMemo();
    const split = new DynamicSplit();
    const shared = new SharedServer();
    const snapshot = { ...base, ingresses: [manifest(0, { hosts: [0], paths: [0], annotations: 2, tls: false })] };
    const sync = () => {
      const { model } = buildModel(snapshot as Snapshot, options, memo);
      return shared.share(split.split(model).model, template.sources, memo.view?.baseConfig)!;
    };
    const first = sync();
    const second = sync();
    expect(second.table).toBe(first.table);
    expect(second.model.defaultServer).toBe(first.model.defaultServer);
    expect(second.model.servers).toBe(first.model.servers);
    expect(second.model.config).toBe(first.model.config);
  });
});
