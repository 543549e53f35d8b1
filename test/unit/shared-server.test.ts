/**
 * Routes as data (src/sync/shared-server.ts), table-driven over test/fixtures: each case's model, with the Lua
 * balancer and `--routes-as-data`, becomes the hosts that keep their own server plus the shared default server with
 * its profiles, and the pushed table of the other hosts. Every such nginx.conf passes a real `nginx -t` with the Lua
 * module; every profile an entry names is a named location of it; every host is either in the table or rendered,
 * never both; and a model with the same behaviours at a thousand hosts has the same profiles as at one.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { loadManifests } from '../../src/manifests/load.js';
import { BuildMemo, buildModel } from '../../src/model/build.js';
import { defaultBuildOptions, type BuildOptions } from '../../src/model/build-types.js';
import type { IngressHostData } from '../../src/model/pushed-tables.js';
import { nginxBinary, testConfig } from '../../src/nginx/binary.js';
import { writeConfigSet } from '../../src/nginx/files.js';
import { checkLua } from '../../src/nginx/lua.js';
import { loadTemplate } from '../../src/render/load.js';
import { render } from '../../src/render/render.js';
import { DynamicSplit } from '../../src/sync/dynamic-split.js';
import { PROFILE_PREFIX, SharedServer, renderedHosts } from '../../src/sync/shared-server.js';
import { ingress, ingressClass, serviceWithEndpoints, snapshotOf } from '../support/manifests.js';

const FIXTURES = new URL('../fixtures/', import.meta.url).pathname;
const template = await loadTemplate();
const scratch = await mkdtemp(join(tmpdir(), 'ia-shared-'));
afterAll(() => rm(scratch, { recursive: true, force: true }));
const lua = await checkLua(nginxBinary(), scratch);
if (!lua.ok) throw new Error(`the Lua module is needed here: ${lua.why}`);
const dynamic = { ...lua.settings, requestMetrics: true, routesAsData: true };

const cases = (await readdir(FIXTURES, { withFileTypes: true }))
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort();

async function shareCase(name: string) {
  const expected = (parse(await readFile(join(FIXTURES, name, 'expected.yaml'), 'utf8')) ?? {}) as {
    options?: Partial<BuildOptions>;
  };
  const snapshot = await loadManifests([join(FIXTURES, name, 'input.yaml')]);
  const built = buildModel(snapshot, { ...defaultBuildOptions, ...expected.options, dynamic });
  const split = new DynamicSplit().split(built.model);
  const sharing = new SharedServer().share(split.model, template.sources);
  if (sharing === null) throw new Error('routes as data is on: share must answer');
  return { model: split.model, sharing, text: render(sharing.model, template) };
}

describe.each(cases)('%s', (name) => {
  it('serves each host from one place, and every named profile is in nginx.conf', async () => {
    const { model, sharing, text } = await shareCase(name);
    const rendered = new Set(sharing.model.servers.map((s) => s.host));
    const pushed = new Set(sharing.table?.hosts.keys() ?? []);
    for (const server of model.servers) expect(rendered.has(server.host) !== pushed.has(server.host)).toBe(true);
    expect(pushed.has('_')).toBe(sharing.table !== null);
    for (const json of sharing.table?.hosts.values() ?? []) {
      const host = JSON.parse(json) as IngressHostData;
      for (const entry of host.entries) {
        expect(text).toContain(`location ${PROFILE_PREFIX}${entry.profile} {`);
        expect(sharing.table!.profiles.has(entry.profile)).toBe(true);
      }
    }
  });

  it('passes nginx -t with the Lua module', async () => {
    const { model, text } = await shareCase(name);
    const dir = join(scratch, name);
    const conf = await writeConfigSet(dir, text, model.certificates);
    const verdict = await testConfig(nginxBinary(), dir, conf);
    expect(verdict.output).not.toMatch(/\[emerg\]/);
    expect(verdict.ok).toBe(true);
  });
});

describe('what keeps a server of its own', () => {
  const snapshot = snapshotOf([
    ingressClass(),
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'ingress-nginx-controller', namespace: 'ingress-nginx' },
      data: { 'allow-snippet-annotations': 'true', 'annotations-risk-level': 'Critical' },
    },
    ...serviceWithEndpoints('web', [{ port: 8080 }]),
    ingress('plain', { 'plain.example.com': [{ path: '/', service: 'web' }] }),
    ingress(
      'snippet',
      { 'snippet.example.com': [{ path: '/', service: 'web' }] },
      { annotations: { 'nginx.ingress.kubernetes.io/server-snippet': 'add_header X-Own 1;' } },
    ),
    ingress(
      'wild',
      { '*.wild.example.com': [{ path: '/', service: 'web' }] },
      { annotations: { 'nginx.ingress.kubernetes.io/server-snippet': 'add_header X-Own 1;' } },
    ),
    ingress('under', { 'a.wild.example.com': [{ path: '/', service: 'web' }] }),
    ingress('main', { 'canary.example.com': [{ path: '/', service: 'web' }] }),
    ingress(
      'canary',
      { 'canary.example.com': [{ path: '/', service: 'web' }] },
      {
        annotations: {
          'nginx.ingress.kubernetes.io/canary': 'true',
          'nginx.ingress.kubernetes.io/canary-by-header': 'x-canary',
        },
      },
    ),
  ]);
  const options: BuildOptions = {
    ...defaultBuildOptions,
    configMap: 'ingress-nginx/ingress-nginx-controller',
    dynamic,
  };
  it.each([
    ['plain.example.com', 'shared'],
    ['snippet.example.com', 'server-snippet'],
    ['*.wild.example.com', 'server-snippet'],
    ['a.wild.example.com', 'a wildcard host with its own server covers it'],
    ['canary.example.com', 'canary'],
    ['_', 'shared'],
  ])('%s: %s', (host, where) => {
    const { model } = buildModel(snapshot, options);
    expect(renderedHosts(model).get(host)).toBe(where);
  });
});

describe('nginx.conf grows with behaviours, not with hosts', () => {
  const hosts = (n: number) =>
    snapshotOf([
      ingressClass(),
      ...serviceWithEndpoints('web', [{ port: 8080 }]),
      ...Array.from({ length: n }, (_, i) =>
        ingress(
          `app-${i}`,
          {
            [`app-${i}.example.com`]: [
              { path: '/', service: 'web' },
              { path: `/api-${i}`, service: 'web' },
            ],
          },
          { annotations: i % 2 ? { 'nginx.ingress.kubernetes.io/proxy-body-size': '8m' } : {} },
        ),
      ),
    ]);
  const shared = (n: number) => {
    const memo = new BuildMemo();
    const { model } = buildModel(hosts(n), { ...defaultBuildOptions, dynamic }, memo);
    const split = new DynamicSplit().split(model).model;
    const sharing = new SharedServer().share(split, template.sources, memo.view?.baseConfig)!;
    return { sharing, text: render(sharing.model, template) };
  };
  it('2 and 1,000 hosts of two behaviours have the same nginx.conf but for the host comment', () => {
    const few = shared(2);
    const many = shared(1000);
    expect(many.sharing.table!.hosts.size).toBe(1001);
    expect(many.sharing.table!.profiles).toEqual(few.sharing.table!.profiles);
    const withoutComment = (text: string) => text.replace(/^ {8}# Ingress .*$/m, '');
    expect(withoutComment(many.text)).toBe(withoutComment(few.text));
  });

  it('a deleted Ingress leaves its profile in nginx.conf (a push, not a reload); a new behaviour adds one', () => {
    const server = new SharedServer();
    const at = (n: number, extra = false) => {
      const snapshot = hosts(n);
      if (extra)
        snapshot.ingresses.push(
          ingress(
            'new',
            { 'new.example.com': [{ path: '/', service: 'web' }] },
            { annotations: { 'nginx.ingress.kubernetes.io/proxy-read-timeout': '77' } },
          ) as never,
        );
      const { model } = buildModel(snapshot, { ...defaultBuildOptions, dynamic });
      return server.share(new DynamicSplit().split(model).model, template.sources)!;
    };
    const two = at(2).table!.profiles;
    const one = at(1).table!.profiles;
    expect(one).toEqual(two);
    const more = at(2, true).table!.profiles;
    expect(more.size).toBe(two.size + 1);
  });

  it('keeps the maps and limit zones a kept profile names after its Ingress is gone: nginx -t passes', async () => {
    const server = new SharedServer();
    const named = ingress(
      'named',
      { 'named.example.com': [{ path: '/', service: 'web' }] },
      {
        annotations: {
          'nginx.ingress.kubernetes.io/enable-cors': 'true',
          'nginx.ingress.kubernetes.io/cors-allow-origin': 'https://a.example.com',
          'nginx.ingress.kubernetes.io/limit-rps': '5',
        },
      },
    );
    const at = (withNamed: boolean) => {
      const one = hosts(1);
      const snapshot = withNamed ? { ...one, ingresses: [...one.ingresses, named as never] } : one;
      const { model } = buildModel(snapshot, { ...defaultBuildOptions, dynamic });
      const sharing = server.share(new DynamicSplit().split(model).model, template.sources)!;
      return { model: sharing.model, text: render(sharing.model, template), profiles: sharing.table!.profiles };
    };
    const before = at(true);
    const after = at(false);
    expect(after.profiles).toEqual(before.profiles);
    expect(after.model.maps.length).toBeGreaterThan(0);
    expect(after.model.requestZones.map((z) => z.zone)).toEqual(before.model.requestZones.map((z) => z.zone));
    const dir = join(scratch, 'kept-definitions');
    const verdict = await testConfig(
      nginxBinary(),
      dir,
      await writeConfigSet(dir, after.text, after.model.certificates),
    );
    expect(verdict.output).not.toMatch(/\[emerg\]/);
    expect(verdict.ok).toBe(true);
  });
});
