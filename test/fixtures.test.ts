/**
 * The table-driven suite: each folder in test/fixtures is one case, named after what it shows.
 * input.yaml holds the manifests; expected.yaml the options, the servers with their locations,
 * the upstreams, the problems and excerpts of nginx.conf. Every rendered config also passes a
 * real `nginx -t`.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { buildModel } from '../src/model/build.js';
import { defaultBuildOptions, type BuildOptions } from '../src/model/build-types.js';
import { loadManifests } from '../src/manifests/load.js';
import { writeConfigSet } from '../src/nginx/files.js';
import { testConfig, nginxBinary } from '../src/nginx/binary.js';
import { loadTemplate } from '../src/render/load.js';
import { render } from '../src/render/render.js';
import { summarize, type Summary } from './support/summarize.js';

const FIXTURES = new URL('./fixtures/', import.meta.url).pathname;
const DEFAULT_CERT = 'certificates/default.pem';

interface Expected {
  options?: Partial<BuildOptions>;
  servers?: Record<string, { cert?: string; locations: string[] }>;
  upstreams?: Summary['upstreams'];
  problems?: string[];
  config?: Record<string, unknown>;
  conf?: { contains?: string[]; excludes?: string[] };
}

const cases = (await readdir(FIXTURES, { withFileTypes: true }))
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort();
const template = await loadTemplate();
const scratch = await mkdtemp(join(tmpdir(), 'ia-fixtures-'));
afterAll(() => rm(scratch, { recursive: true, force: true }));

async function runCase(name: string) {
  const expected = (parse(await readFile(join(FIXTURES, name, 'expected.yaml'), 'utf8')) ?? {}) as Expected;
  const snapshot = await loadManifests([join(FIXTURES, name, 'input.yaml')]);
  const options = { ...defaultBuildOptions, ...expected.options };
  const result = buildModel(snapshot, options);
  return { expected, snapshot, options, result, text: render(result.model, template) };
}

describe('fixtures', () => {
  it('has at least 40 cases', () => expect(cases.length).toBeGreaterThanOrEqual(40));

  describe.each(cases)('%s', (name) => {
    it('builds the expected model', async () => {
      const { expected, result } = await runCase(name);
      const actual = summarize(result);
      const servers: Summary['servers'] = { _: { cert: DEFAULT_CERT, locations: ['/ -> 404'] } };
      for (const [host, server] of Object.entries(expected.servers ?? {})) {
        servers[host] = { cert: server.cert ?? DEFAULT_CERT, locations: server.locations };
      }
      expect(actual.servers).toEqual(servers);
      expect(actual.upstreams).toEqual(expected.upstreams ?? {});
      expect(actual.problems).toEqual(expected.problems ?? []);
      if (expected.config) expect(result.model.config).toMatchObject(expected.config);
    });

    it('renders the expected nginx.conf excerpts', async () => {
      const { expected, text } = await runCase(name);
      for (const excerpt of expected.conf?.contains ?? []) expect(text).toContain(excerpt);
      for (const excerpt of expected.conf?.excludes ?? []) expect(text).not.toContain(excerpt);
    });

    it('passes nginx -t', async () => {
      const { result, text } = await runCase(name);
      const dir = join(scratch, name);
      const conf = await writeConfigSet(dir, text, result.model.certificates);
      const verdict = await testConfig(nginxBinary(), dir, conf);
      expect(verdict.output).not.toMatch(/\[emerg\]/);
      expect(verdict.ok).toBe(true);
    });

    it('does not depend on the order of the objects', async () => {
      const { snapshot, options, text } = await runCase(name);
      const reversed = Object.fromEntries(
        Object.entries(snapshot).map(([k, v]) => [k, [...(v as unknown[])].reverse()]),
      );
      expect(render(buildModel(reversed as unknown as typeof snapshot, options).model, template)).toBe(text);
    });
  });
});
