/**
 * Random ModSecurity token streams as modsecurity-snippet: what the allow-list accepts is printed again as exactly the
 * directives it checked (read back, they check the same), names no file, program or audit log, and the config with it
 * passes a real `nginx -t` with Debian's module, which parses every rule at load: one tenant's snippet cannot fail
 * every tenant's reload. What it refuses leaves the location denied and adds no ModSecurity line.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANNOTATION_PREFIX } from '../../src/model/annotations/types.js';
import { buildModel } from '../../src/model/build.js';
import {
  checkModSecuritySnippet,
  MODSECURITY_DIRECTIVES,
  modSecurityLine,
  modSecurityRules,
  OPERATORS,
  REFUSED_MODSECURITY,
  VARIABLES,
} from '../../src/model/modsecurity-policy.js';
import type { Snapshot } from '../../src/model/snapshot.js';
import { writeConfigSet } from '../../src/nginx/files.js';
import { nginxBinary, testConfig } from '../../src/nginx/binary.js';
import { DEFAULT_TEMPLATE, readTemplateSources } from '../../src/render/load.js';
import { compileTemplate, render } from '../../src/render/render.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { nginxTestBuildOptions } from '../support/nginx.js';
import { CPU_BOUND_MS } from '../support/timeouts.js';

const template = compileTemplate(await readTemplateSources(DEFAULT_TEMPLATE));
const options = await nginxTestBuildOptions();
const installed = existsSync('/usr/lib/nginx/modules/ngx_http_modsecurity_module.so');
let scratch: string;
beforeAll(async () => void (scratch = await mkdtemp(join(tmpdir(), 'ia-modsec-'))));
afterAll(() => rm(scratch, { recursive: true, force: true }));

/** Statements the list accepts, so that random edits of them probe its edges. */
const EXAMPLES: readonly string[] = [
  'SecRuleEngine On',
  'SecRuleEngine DetectionOnly',
  'SecRequestBodyAccess On',
  'SecRequestBodyLimit 1048576',
  'SecRequestBodyLimitAction ProcessPartial',
  'SecRuleRemoveById 920350 942100-942999',
  'SecRuleRemoveByTag attack-sqli',
  'SecRuleUpdateTargetById 942100 "!ARGS:password"',
  'SecAction "id:900,phase:1,nolog,pass,t:none,setvar:tx.paranoia_level=2"',
  'SecRule REQUEST_HEADERS:User-Agent "block-ua" "id:107,phase:1,log,deny,status:403,msg:\'UA blocked\'"',
  'SecRule ARGS:q "@contains drop table" "id:108,phase:2,deny,t:lowercase,logdata:\'%{MATCHED_VAR}\'"',
  'SecRule REMOTE_ADDR "@ipMatch 10.0.0.0/8,192.168.1.1" "id:109,phase:1,pass,nolog,ctl:ruleEngine=Off"',
  'SecRule REQUEST_URI "@rx ^/admin(/|$)" "id:110,phase:1,deny,status:404,chain"',
  'SecRule REQUEST_METHOD "!@streq GET" "t:none"',
  'SecRule ARGS_NAMES|REQUEST_COOKIES:/^sess/ "@detectSQLi" "id:111,phase:2,block,capture,tag:\'custom\'"',
  'SecRule REQUEST_BODY "@validateByteRange 9,10,13,32-126" "id:112,phase:2,deny"',
];
const NAMES = [...Object.keys(MODSECURITY_DIRECTIVES), ...Object.keys(REFUSED_MODSECURITY), 'secruleengine', 'Sec'];
const WORDS = [
  'On',
  'Off',
  'DetectionOnly',
  '1',
  '99999',
  '100000',
  '949110',
  '0-9999999',
  '/etc/passwd',
  '../../x',
  '"id:5,phase:2,deny"',
  '"id:6,phase:2,exec:/bin/sh"',
  '"id:7,setvar:ip.x=1"',
  '"id:8,ctl:auditLogParts=+E"',
  '"id:9,phase:1,msg:\'%{ENV.PATH}\'"',
  '"@rx ("',
  '"@rx a{2,"',
  '"@ipMatch 300.1.1.1"',
  '"@pmFromFile /etc/passwd"',
  '"@validateByteRange 1-999"',
  '"@eq x"',
  '"@detectXSS"',
  '"@detectXSS x"',
  ...VARIABLES.slice(0, 8),
  'ENV',
  'IP:x',
  'REQUEST_HEADERS:/(/',
  ...OPERATORS.slice(0, 6).map((o) => `"@${o} x"`),
];
const FRAGMENTS = ['"', "'", '\\', '\\"', "\\'", '\n', '\\\n', '\t', '#', ',', ':', '|', '%{', '\0', 'é', ' '];
const word = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom(...WORDS) },
  { weight: 1, arbitrary: fc.constantFrom(...FRAGMENTS) },
  { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
);
const randomStatement = fc
  .tuple(fc.constantFrom(...NAMES), fc.array(word, { maxLength: 3 }))
  .map(([n, args]) => [n, ...args].join(' '));
const editedStatement = fc.tuple(fc.constantFrom(...EXAMPLES), fc.nat(40), word).map(([s, i, w]) => {
  const cut = Math.min(i, s.length);
  return `${s.slice(0, cut)}${w}${s.slice(cut + 1)}`;
});
const statement = fc.oneof(
  { weight: 2, arbitrary: randomStatement },
  { weight: 3, arbitrary: fc.constantFrom(...EXAMPLES) },
  { weight: 3, arbitrary: editedStatement },
);
const snippets = fc.array(statement, { minLength: 1, maxLength: 4 }).map((list) => list.join('\n'));

function snapshot(snippet: string): Snapshot {
  const [service, ...slices] = serviceWithEndpoints('web', [{ port: 9000 }]);
  return {
    ingressClasses: [ingressClass()],
    ingresses: [
      ingress(
        'waf',
        { 'a.example.com': [{ path: '/api', service: 'web' }] },
        {
          annotations: {
            [`${ANNOTATION_PREFIX}enable-modsecurity`]: 'true',
            [`${ANNOTATION_PREFIX}enable-owasp-core-rules`]: 'true',
            [`${ANNOTATION_PREFIX}modsecurity-snippet`]: snippet,
          },
        },
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

function build(snippet: string) {
  const { model, problems } = buildModel(snapshot(snippet), options);
  const refused = problems.some((p) => p.field === `metadata.annotations.${ANNOTATION_PREFIX}modsecurity-snippet`);
  return { model, refused, text: render(model, template) };
}

describe.skipIf(!installed)('modsecurity-snippet from random token streams', () => {
  it(
    'is printed as exactly the checked directives, or refused with the location denied',
    () => {
      let accepted = 0;
      fc.assert(
        fc.property(snippets, (snippet) => {
          const checked = checkModSecuritySnippet(snippet, 'ingress');
          const { model, refused, text } = build(snippet);
          // the Ingress's locations (the host's own `/` answers 404 for paths no Ingress has)
          const locations = model.servers.find((s) => s.host === 'a.example.com')!.locations.filter((l) => l.ingress);
          expect(locations.length).toBeGreaterThan(0);
          expect(refused).toBe(!checked.ok);
          if (!checked.ok) {
            expect(locations.every((l) => l.denied && l.waf === null)).toBe(true);
            return;
          }
          accepted++;
          const printed = checked.value.map(modSecurityLine);
          // read back, the printed lines check to the same directives
          const again = checkModSecuritySnippet(printed.join('\n'), 'ingress');
          expect(again.ok && again.value).toEqual(checked.value);
          for (const l of locations) expect(l.waf?.rules).toEqual(modSecurityRules(checked.value));
          for (const line of printed) {
            expect(Object.keys(MODSECURITY_DIRECTIVES)).toContain(line.split(' ')[0]);
            expect(line.trimEnd()).not.toMatch(/[\t\r\n]/);
            expect(line).not.toMatch(/^Include|exec:|setenv|initcol|^SecAuditLog /i);
            expect(text).toContain(JSON.stringify(line).slice(1, -1));
          }
        }),
        { numRuns: 1500 },
      );
      expect(accepted).toBeGreaterThan(100);
    },
    CPU_BOUND_MS,
  );

  it('that is accepted keeps the config valid for a real nginx -t, which parses every rule', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        snippets.filter((s) => checkModSecuritySnippet(s, 'ingress').ok),
        async (snippet) => {
          const { model, text } = build(snippet);
          const dir = join(scratch, String(run++));
          const verdict = await testConfig(nginxBinary(), dir, await writeConfigSet(dir, text, model.certificates));
          await rm(dir, { recursive: true, force: true });
          // nginx -t -q still says, at notice, how many rules the module loaded: anything else is a complaint
          const complaints = verdict.output
            .split('\n')
            .filter((l) => l !== '' && !/\[notice\].*ModSecurity-nginx v/.test(l));
          expect({ ok: verdict.ok, complaints }).toEqual({ ok: true, complaints: [] });
        },
      ),
      { numRuns: 40 },
    );
  }, 240_000);
});
