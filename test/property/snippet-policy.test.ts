/**
 * Random token streams as snippets (finding 6 of issue 14): whatever the allow-list accepts
 * renders as exactly the directives it checked (nginx reads the same names and arguments, in
 * the snippet's own context, inside no block of their own) and nothing else, and the config
 * still passes a real `nginx -t`, so one tenant's snippet cannot stall every reload.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CPU_BOUND_MS } from '../support/timeouts.js';
import { ANNOTATION_PREFIX } from '../../src/model/annotations/types.js';
import { buildModel } from '../../src/model/build.js';
import type { NginxModel } from '../../src/model/nginx-model.js';
import type { Snapshot } from '../../src/model/snapshot.js';
import { ALLOWED_DIRECTIVES, REFUSED_REASONS, SAFE_VARIABLES } from '../../src/model/snippet-policy.js';
import { writeConfigSet } from '../../src/nginx/files.js';
import { nginxBinary, testConfig } from '../../src/nginx/binary.js';
import { nginxTestBuildOptions } from '../support/nginx.js';
import { readTemplateSources, DEFAULT_TEMPLATE } from '../../src/render/load.js';
import { compileTemplate, render } from '../../src/render/render.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { parseConf, type Directive } from '../support/nginx-conf.js';

const template = compileTemplate(await readTemplateSources(DEFAULT_TEMPLATE));
// With this nginx's optional modules, so that the headers-more directives are on the list and checked by nginx -t.
const options = await nginxTestBuildOptions();
let scratch: string;
beforeAll(async () => void (scratch = await mkdtemp(join(tmpdir(), 'ia-snippets-'))));
afterAll(() => rm(scratch, { recursive: true, force: true }));

const KEYS = { 'configuration-snippet': 'location', 'server-snippet': 'server' } as const;
type Key = keyof typeof KEYS;

function snapshot(key: Key, snippet: string): Snapshot {
  const [service, ...slices] = serviceWithEndpoints('web', [{ port: 9000 }]);
  return {
    ingressClasses: [ingressClass()],
    ingresses: [
      ingress(
        'snip',
        { 'a.example.com': [{ path: '/api', service: 'web' }] },
        { annotations: { [`${ANNOTATION_PREFIX}${key}`]: snippet } },
      ),
    ],
    services: [service],
    endpointSlices: slices,
    secrets: [],
    configMaps: [
      {
        metadata: { namespace: 'ingress', name: 'config' },
        data: { 'allow-snippet-annotations': 'true', 'annotations-risk-level': 'Critical' },
      },
    ],
  } as unknown as Snapshot;
}

/** withoutSnippets is the same model with the checked snippets taken out, and nothing else changed. */
function withoutSnippets(model: NginxModel): NginxModel {
  return {
    ...model,
    servers: model.servers.map((s) => ({
      ...s,
      snippet: null,
      locations: s.locations.map((l) => ({ ...l, snippet: null })),
    })),
  };
}

const spell = (d: Directive) => JSON.stringify([d.context, d.name, d.args]);

/** added lists the directives of `text` that `base` lacks, counting repeats. */
function added(text: string, base: string): Directive[] {
  const left = new Map<string, number>();
  for (const d of parseConf(base)) left.set(spell(d), (left.get(spell(d)) ?? 0) + 1);
  return parseConf(text).filter((d) => {
    const n = left.get(spell(d)) ?? 0;
    if (n > 0) left.set(spell(d), n - 1);
    return n === 0;
  });
}

// Token streams: names on and off the list, arguments plausible and hostile, quoted or not, and nginx's punctuation.
const names = fc.constantFrom(
  ...ALLOWED_DIRECTIVES.map((d) => d.name),
  ...Object.keys(REFUSED_REASONS),
  'proxy_buffering',
  'ssl_certificate',
  'js_content',
  'lua_code_cache',
);
const words = fc.constantFrom(
  'X-Test',
  'Set-Cookie',
  'Host',
  'on',
  'off',
  'always',
  'break',
  'last',
  'permanent',
  'redirect',
  '1h',
  '8m',
  '30s',
  '200',
  '301',
  '444',
  '99',
  'all',
  '10.0.0.0/8',
  '^/a/(.*)$',
  '/b/$1',
  'https://example.com/',
  '(?<x>.)',
  '^/(',
  '/_external-auth-x',
  'a b',
  'modified',
  '-1',
  ...SAFE_VARIABLES.slice(0, 6).map((v) => `$${v}`),
  '$http_x_user',
  '${uri}',
  '${uri',
  '$',
  '$ia_hsts',
  '$proxy_upstream_name',
  '$1',
  "'X-A: 1'",
  '-s',
  '-t',
  '-r',
  'text/html',
  'X-*',
);
const fragments = fc.constantFrom(
  ';',
  '{',
  '}',
  '#',
  '"',
  "'",
  '\\',
  '\\"',
  '\n',
  '\t',
  '\r',
  '$',
  '${',
  ' ',
  'é',
  '\0',
);
const argument = fc.oneof(
  { weight: 5, arbitrary: words },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom('"', "'"), fc.array(fc.oneof(words, fragments), { maxLength: 4 }))
      .map(([q, parts]) => `${q}${parts.join('').replaceAll('\\', '\\\\').replaceAll(q, `\\${q}`)}${q}`),
  },
  { weight: 1, arbitrary: fragments },
  { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
);
const randomStatement = fc
  .tuple(names, fc.array(argument, { maxLength: 4 }), fc.constantFrom(';', ';', ';', ' ;', '', '{', '}'))
  .map(([n, args, end]) => `${[n, ...args].join(' ')}${end}`);
/** Statements the list accepts, so that random edits of them probe its edges. */
const EXAMPLES: readonly string[][] = [
  ['add_header', 'X-Test', '"a $host b"'],
  ['add_header', 'X-Frame-Options', 'DENY', 'always'],
  ['proxy_set_header', 'X-User', '$http_x_user'],
  ['proxy_hide_header', 'X-Powered-By'],
  ['proxy_pass_header', 'Server'],
  ['expires', 'modified', '+1h'],
  ['expires', 'max'],
  ['gzip', 'on'],
  ['client_max_body_size', '8m'],
  ['client_body_buffer_size', '16k'],
  ['proxy_connect_timeout', '5s'],
  ['proxy_send_timeout', '60'],
  ['proxy_read_timeout', '2m'],
  ['return', '403'],
  ['return', '302', 'https://example.com$request_uri'],
  ['return', '200', "'ok $remote_addr'"],
  ['return', 'https://example.com/'],
  ['rewrite', '^/a/(.*)$', '/b/$1', 'break'],
  ['rewrite', '"^/x{2,3}$"', '/y?z=$arg_q', 'redirect'],
  ['allow', '10.0.0.0/8'],
  ['deny', 'all'],
  ['allow', '::1'],
  ['sub_filter', "'</body>'", "'<p>$host</p></body>'"],
  ['sub_filter_once', 'off'],
  ['more_set_headers', '"X-Frame-Options: DENY"', "'X-Host: $host'"],
  ['more_set_headers', '-s', "'404 500'", '-t', 'text/html', "'X-Error: 1'"],
  ['more_clear_headers', 'Server', 'X-Powered-*'],
  ['more_set_input_headers', '-r', "'X-User: $http_x_alias'"],
  ['more_clear_input_headers', 'X-Debug'],
];
const example = fc.constantFrom(...EXAMPLES);
const validStatement = example.map((words) => `${words.join(' ')};`);
const editedStatement = fc
  .tuple(example, fc.nat(3), argument)
  .map(([words, i, arg]) => `${words.map((w, j) => (j === Math.min(i + 1, words.length - 1) ? arg : w)).join(' ')};`);
const statement = fc.oneof(
  { weight: 2, arbitrary: randomStatement },
  { weight: 3, arbitrary: validStatement },
  { weight: 2, arbitrary: editedStatement },
);
const snippets = fc
  .array(statement, { minLength: 1, maxLength: 5 })
  .map((list) => list.join(fc.sample(fc.constantFrom('\n', ' ', '\t'), 1)[0]));
const cases = fc.record({ key: fc.constantFrom<Key>('configuration-snippet', 'server-snippet'), snippet: snippets });

function build({ key, snippet }: { key: Key; snippet: string }) {
  const { model, problems } = buildModel(snapshot(key, snippet), options);
  const refused = problems.some((p) => p.field === `metadata.annotations.${ANNOTATION_PREFIX}${key}`);
  return { model, refused, text: render(model, template) };
}

describe('finding 6: snippets from random token streams', () => {
  it(
    'render exactly the checked, allow-listed directives in their own context, or are refused',
    () => {
      let accepted = 0;
      fc.assert(
        fc.property(cases, ({ key, snippet }) => {
          const { model, refused, text } = build({ key, snippet });
          const extra = added(text, render(withoutSnippets(model), template));
          if (refused) {
            expect(extra).toEqual([]);
            return;
          }
          accepted++;
          const context = KEYS[key];
          const where = context === 'server' ? ['http', 'server'] : ['http', 'server', 'location'];
          const server = model.servers.find((s) => s.host === 'a.example.com')!;
          const checked = context === 'server' ? server.snippet! : server.locations.flatMap((l) => l.snippet ?? []);
          // nginx reads back the very names and arguments the allow-list checked, and nothing more.
          expect(extra.map((d) => ({ name: d.name, args: d.args }))).toEqual(
            checked.map((d) => ({ name: d.name, args: d.args })),
          );
          for (const d of extra) {
            expect(d.context).toEqual(where);
            expect(ALLOWED_DIRECTIVES.some((a) => a.name === d.name && a.contexts.includes(context))).toBe(true);
          }
        }),
        { numRuns: 2000 },
      );
      // The generator must reach the accepting side too, or the property says little.
      expect(accepted).toBeGreaterThan(30);
    },
    CPU_BOUND_MS,
  );

  it('that are accepted keep the config valid for a real nginx -t', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        cases.filter((c) => !build(c).refused),
        async (c) => {
          const { model, text } = build(c);
          const dir = join(scratch, String(run++));
          const verdict = await testConfig(nginxBinary(), dir, await writeConfigSet(dir, text, model.certificates));
          await rm(dir, { recursive: true, force: true });
          expect(verdict.output).toBe('');
        },
      ),
      { numRuns: 60 },
    );
  }, 120_000);
});
