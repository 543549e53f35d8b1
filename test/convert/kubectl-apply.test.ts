/**
 * `ingress-actors convert … | kubectl apply -f -`, as a user runs it, against the test API server with the vendored
 * standard-channel CRDs: every case's objects are accepted, and read back they hold what convert printed (nothing
 * pruned: the server keeps only fields its schema knows), with the server's defaults added.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { GATEWAY_API_INSTALL } from '../../src/dev/api-server/gateway-api.js';
import { kubectlFor, startTestApi, type Kubectl, type TestApi } from '../support/kube-api.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const CLI = join(ROOT, 'bin/ingress-actors');
const CASES = join(ROOT, 'test/convert/cases');
const cases = (await readdir(CASES, { withFileTypes: true }))
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort();

let test: TestApi;
let kubectl: Kubectl;

beforeAll(async () => {
  test = await startTestApi('ia-convert-apply-');
  kubectl = kubectlFor(test.kubeconfig, join(test.dir, 'kube-cache'));
  await kubectl.run(['apply', '-f', GATEWAY_API_INSTALL]);
  const namespaces = ['shop', 'blog', 'team-a', 'a', 'a-b', 'secure', 'streams'];
  for (const ns of namespaces) await kubectl.run(['create', 'namespace', ns]);
}, 60_000);
afterAll(() => test?.close());

it.each(cases)(
  '%s: kubectl apply takes the converted objects as printed',
  async (name) => {
    // a case's options.json as the flags they are (test/convert/convert.test.ts reads it as options)
    const options = JSON.parse(await readFile(join(CASES, name, 'options.json'), 'utf8').catch(() => '{}'));
    const flags = [
      ...(options.tcpServices ? ['--tcp-services-configmap', options.tcpServices] : []),
      ...(options.udpServices ? ['--udp-services-configmap', options.udpServices] : []),
    ];
    const converted = await execa(CLI, ['convert', ...flags, '--manifests', join(CASES, name, 'input.yaml')], {
      timeout: 20_000,
    });
    const applied = await kubectl.try(['apply', '-f', '-'], converted.stdout);
    expect(applied.stderr).toBe('');
    expect(applied.exitCode).toBe(0);
    // read back, all in one call: the objects the printed YAML names, as the API server holds them
    const read = JSON.parse((await kubectl.run(['get', '-f', '-', '-o', 'json'], converted.stdout)).stdout) as {
      items: { kind: string; metadata: { name: string; namespace?: string } }[];
    };
    const key = (o: { kind: string; metadata: { name: string; namespace?: string } }) =>
      `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`;
    const held = new Map(read.items.map((o) => [key(o), o as Record<string, unknown>]));
    const printed = parseAllDocuments(converted.stdout).map((d) => d.toJS());
    expect(held.size).toBe(printed.length);
    for (const object of printed) {
      const content = object.apiVersion === 'v1' ? 'data' : 'spec';
      expect(held.get(key(object))?.[content], key(object)).toMatchObject(object[content]);
    }
  },
  60_000,
);
