/**
 * Finding 2 of issue 14: a size or count the validators pass but nginx refuses fails `nginx -t`
 * for every tenant. Two checks against the real nginx here (1.22, as Debian 12 ships it):
 *
 * - a table of nginx's own bounds: the largest value each validator accepts passes `nginx -t`,
 *   and where nginx's bound is the validator's, the next value is refused by both;
 * - a walk of the whole ConfigMap key registry and every annotation key: for each one taking a
 *   number (bare, or with a size or time unit), the largest value its validator accepts is found
 *   by bisection and rendered through buildModel and the template, and nginx -t must pass.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { annotationGroups, supportedKeys } from '../../src/model/annotations/registry.js';
import { ANNOTATION_PREFIX, type AnnotationInput } from '../../src/model/annotations/types.js';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import { defaultGlobalConfig } from '../../src/model/config-map/defaults.js';
import { configKeys } from '../../src/model/config-map/registry.js';
import type { GlobalConfig } from '../../src/model/nginx-model.js';
import type { Snapshot } from '../../src/model/snapshot.js';
import { nginxBinary, testConfig } from '../../src/nginx/binary.js';
import { writeConfigSet } from '../../src/nginx/files.js';
import { loadTemplate } from '../../src/render/load.js';
import { render } from '../../src/render/render.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'ia-bounds-'));
});
afterAll(() => rm(scratch, { recursive: true, force: true }));

/** annotationAccepts says whether the annotation `key` alone (with `companions`) passes its group's validator. */
function annotationAccepts(key: string, value: string, companions: Record<string, string> = {}): boolean {
  const values: Record<string, string> = { ...companions, [key]: value };
  let refused = false;
  const input: AnnotationInput = {
    namespace: 'default',
    name: 'probe',
    config: { ...defaultGlobalConfig, annotationsRiskLevel: 'Critical', allowSnippetAnnotations: true },
    modules: {},
    get: (k) => values[k] || undefined,
    keyOf: (k) => k,
    invalid: (k) => {
      if (k === key) refused = true;
    },
    note: () => {},
    secret: () => undefined,
  };
  for (const group of annotationGroups) group.parse(input);
  return !refused;
}

/** configAccepts says whether the ConfigMap key takes `value`. */
function configAccepts(key: string, value: string): boolean {
  const entry = configKeys.find((k) => k.key === key)!;
  return entry.apply(value, { ...defaultGlobalConfig } as GlobalConfig & Record<string, unknown>).ok;
}

let run = 0;
/** nginxAccepts runs `nginx -t` on a tiny config holding `http` directives and `location` ones. */
async function nginxAccepts(http: string, location = ''): Promise<{ ok: boolean; output: string }> {
  const dir = join(scratch, `t${run++}`);
  await mkdir(join(dir, 'logs'), { recursive: true });
  const conf = [
    'pid nginx.pid;',
    'error_log stderr;',
    'events {}',
    'http {',
    '  access_log off;',
    '  limit_conn_zone $binary_remote_addr zone=z:5m;',
    `  ${http}`,
    '  upstream u { server 127.0.0.1:9; }',
    '  server { listen 127.0.0.1:9; server_name a.example.com b.example.com; location / { proxy_pass http://u; ' +
      `${location} } }`,
    '}',
  ].join('\n');
  await writeFile(join(dir, 'nginx.conf'), conf);
  return testConfig(nginxBinary(), dir, join(dir, 'nginx.conf'));
}

interface Bound {
  readonly field: string;
  readonly accepts: (value: string) => boolean;
  /** the directives, in http (h) or location (l) context, that the value becomes */
  readonly nginx: (value: string) => { h?: string; l?: string };
  readonly max: string;
  /** the first value past max, which nginx refuses too (absent where the validator's bound is tighter) */
  readonly refused?: string;
  /** values below the range, refused by the validator and by nginx */
  readonly below?: string;
}

const a = (key: string) => (value: string) => annotationAccepts(key, value);
const c = (key: string) => (value: string) => configAccepts(key, value);

const BOUNDS: readonly Bound[] = [
  {
    field: 'annotation client-body-buffer-size',
    accepts: a('client-body-buffer-size'),
    nginx: (v) => ({ l: `client_body_buffer_size ${v};` }),
    max: '8796093022207m',
    refused: '8796093022208m',
  },
  {
    field: 'annotation client-body-buffer-size (no g)',
    accepts: a('client-body-buffer-size'),
    nginx: (v) => ({ l: `client_body_buffer_size ${v};` }),
    max: '1048576k',
    refused: '1g',
  },
  {
    field: 'annotation proxy-body-size',
    accepts: a('proxy-body-size'),
    nginx: (v) => ({ l: `client_max_body_size ${v};` }),
    max: '8589934591g',
    refused: '8589934592g',
  },
  {
    field: 'annotation proxy-body-size (bytes)',
    accepts: a('proxy-body-size'),
    nginx: (v) => ({ l: `client_max_body_size ${v};` }),
    max: '9223372036854775807',
    refused: '9223372036854775808',
  },
  {
    field: 'annotation proxy-buffer-size',
    accepts: a('proxy-buffer-size'),
    nginx: (v) => ({ l: `proxy_buffer_size ${v}; proxy_buffers 4 ${v};` }),
    max: '1024m',
    refused: '1025m',
    below: '0',
  },
  {
    field: 'annotation limit-connections',
    accepts: a('limit-connections'),
    nginx: (v) => ({ l: `limit_conn z ${v};` }),
    max: '65535',
    refused: '65536',
  },
  {
    field: 'configmap client-header-buffer-size',
    accepts: c('client-header-buffer-size'),
    nginx: (v) => ({ h: `client_header_buffer_size ${v};` }),
    max: '8796093022207m',
    refused: '8796093022208m',
  },
  {
    field: 'configmap large-client-header-buffers',
    accepts: c('large-client-header-buffers'),
    nginx: (v) => ({ h: `large_client_header_buffers ${v};` }),
    max: '9999 8796093022207m',
    below: '4 511',
  },
  {
    field: 'configmap map-hash-bucket-size',
    accepts: c('map-hash-bucket-size'),
    nginx: (v) => ({ h: `map_hash_bucket_size ${v}; map $host $x { a 1; }` }),
    max: '65472',
    refused: '65473',
  },
  {
    field: 'configmap server-name-hash-bucket-size',
    accepts: c('server-name-hash-bucket-size'),
    nginx: (v) => ({
      h: `server_names_hash_bucket_size ${v}; server { listen 127.0.0.1:9; server_name c.example.com; }`,
    }),
    max: '65472',
    refused: '65473',
  },
  {
    field: 'configmap proxy-body-size',
    accepts: c('proxy-body-size'),
    nginx: (v) => ({ h: `client_max_body_size ${v};` }),
    max: '8589934591g',
    refused: '8589934592g',
  },
  {
    field: 'configmap proxy-read-timeout',
    accepts: c('proxy-read-timeout'),
    nginx: (v) => ({ h: `proxy_read_timeout ${v};` }),
    max: '999999999d',
  },
];

describe('finding 2: sizes and counts at nginx 1.22 limits', () => {
  it.each(BOUNDS)(
    'finding 2: $field: the validator takes $max, which nginx takes, and refuses what nginx refuses',
    async (bound) => {
      expect(bound.accepts(bound.max), `validator takes ${bound.max}`).toBe(true);
      const max = bound.nginx(bound.max);
      const atMax = await nginxAccepts(max.h ?? '', max.l ?? '');
      expect(atMax.output).not.toMatch(/\[emerg\]/);
      expect(atMax.ok).toBe(true);
      for (const past of [bound.refused, bound.below]) {
        if (past === undefined) continue;
        expect(bound.accepts(past), `validator refuses ${past}`).toBe(false);
        const beyond = bound.nginx(past);
        expect((await nginxAccepts(beyond.h ?? '', beyond.l ?? '')).ok, `nginx refuses ${past}`).toBe(false);
      }
    },
  );
});

/** The units a numeric value may carry: bare, sizes, times. */
const SUFFIXES = ['', 'k', 'm', 'g', 'ms', 's', 'h', 'd'];
const LIMIT = 10n ** 22n;

/** largestAccepted bisects for the largest n such that `${n}${suffix}` is accepted, or null when none small is. */
function largestAccepted(accepts: (value: string) => boolean, suffix: string): string | null {
  const small = [0n, 1n, 2n, 3n, 5n, 10n, 100n, 400n, 1000n].find((n) => accepts(`${n}${suffix}`));
  if (small === undefined) return null;
  let lo: bigint = small;
  let hi = LIMIT;
  if (accepts(`${hi}${suffix}`)) return `${hi}${suffix}`;
  while (hi - lo > 1n) {
    const mid: bigint = (lo + hi) / 2n;
    if (accepts(`${mid}${suffix}`)) lo = mid;
    else hi = mid;
  }
  return `${lo}${suffix}`;
}

/** What some annotations need beside them to be read at all. */
function companions(key: string): Record<string, string> {
  if (key.startsWith('session-cookie-')) return { affinity: 'cookie' };
  if (key.startsWith('cors-')) return { 'enable-cors': 'true' };
  if (key.startsWith('canary')) return { canary: 'true' };
  if (key === 'limit-rate' || key === 'limit-rate-after') return { 'proxy-buffering': 'on' };
  return {};
}

describe('finding 2: the largest value of every numeric key renders a config nginx accepts', () => {
  const annotationValues = supportedKeys.flatMap(({ key: { key } }) =>
    SUFFIXES.map((suffix) => largestAccepted((v) => annotationAccepts(key, v, companions(key)), suffix))
      .filter((v): v is string => v !== null)
      .map((value) => ({ key, value })),
  );
  const configValues = configKeys.flatMap(({ key }) =>
    SUFFIXES.map((suffix) => largestAccepted((v) => configAccepts(key, v), suffix))
      .filter((v): v is string => v !== null)
      .map((value) => ({ key, value })),
  );

  it('finds the numeric keys (the walk is not silently empty)', () => {
    const keys = new Set(annotationValues.map((v) => v.key));
    for (const key of [
      'proxy-body-size',
      'client-body-buffer-size',
      'proxy-buffer-size',
      'limit-connections',
      'limit-rps',
      'proxy-read-timeout',
    ])
      expect(keys).toContain(key);
    const config = new Set(configValues.map((v) => v.key));
    for (const key of [
      'proxy-body-size',
      'map-hash-bucket-size',
      'max-worker-connections',
      'keep-alive',
      'gzip-min-length',
    ])
      expect(config).toContain(key);
  });

  /** snapshotWith makes one Ingress per annotation value (each on its own host), or a ConfigMap holding `data`. */
  function snapshotWith(
    annotations: readonly { key: string; value: string }[],
    data: Record<string, string> = {},
  ): Snapshot {
    const [service, ...slices] = serviceWithEndpoints('web', [{ port: 9000 }]);
    return {
      ingressClasses: [ingressClass()],
      ingresses: annotations.map(({ key, value }, i) =>
        ingress(
          `i${i}`,
          { [`h${i}.example.com`]: [{ path: '/', service: 'web' }] },
          {
            annotations: Object.fromEntries(
              Object.entries({ ...companions(key), [key]: value }).map(([k, v]) => [`${ANNOTATION_PREFIX}${k}`, v]),
            ),
          },
        ),
      ),
      services: [service],
      endpointSlices: slices,
      secrets: [],
      configMaps: [
        { metadata: { namespace: 'ingress', name: 'config' }, data: { 'annotations-risk-level': 'Critical', ...data } },
      ],
    } as unknown as Snapshot;
  }

  async function nginxTakes(snapshot: Snapshot): Promise<{ ok: boolean; output: string; problems: string[] }> {
    const { model, problems } = buildModel(snapshot, { ...defaultBuildOptions, configMap: 'ingress/config' });
    const dir = join(scratch, `w${run++}`);
    const conf = await writeConfigSet(dir, render(model, await loadTemplate()), model.certificates);
    const verdict = await testConfig(nginxBinary(), dir, conf);
    return { ...verdict, problems: problems.map((p) => `${p.field}: ${p.message}`) };
  }

  it('finding 2: every annotation at the largest value its validator accepts passes nginx -t', async () => {
    const all = await nginxTakes(snapshotWith(annotationValues));
    if (!all.ok) {
      // Name the culprits: each value alone.
      const bad: string[] = [];
      for (const v of annotationValues) if (!(await nginxTakes(snapshotWith([v]))).ok) bad.push(`${v.key}: ${v.value}`);
      expect(bad, all.output).toEqual([]);
    }
    expect(all.problems.filter((p) => p.includes('left out'))).toEqual([]);
    expect(all.ok).toBe(true);
  }, 120_000);

  it('finding 2: every ConfigMap key at the largest value its validator accepts passes nginx -t', async () => {
    const bad: string[] = [];
    for (const v of configValues) {
      const verdict = await nginxTakes(snapshotWith([{ key: 'proxy-body-size', value: '1m' }], { [v.key]: v.value }));
      if (!verdict.ok) bad.push(`${v.key}: ${v.value}: ${verdict.output.split('\n')[0]}`);
    }
    expect(bad).toEqual([]);
  }, 300_000);
});
