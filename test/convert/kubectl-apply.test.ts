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
    for (const object of parseAllDocuments(converted.stdout).map((d) => d.toJS())) {
      const ns = object.metadata.namespace ? ['-n', object.metadata.namespace] : [];
      const plural = {
        GatewayClass: 'gatewayclasses',
        Gateway: 'gateways',
        HTTPRoute: 'httproutes',
        ReferenceGrant: 'referencegrants',
        TLSRoute: 'tlsroutes',
        TCPRoute: 'tcproutes',
        UDPRoute: 'udproutes',
        BackendTLSPolicy: 'backendtlspolicies',
        ConfigMap: 'configmaps',
      }[object.kind as string];
      const resource = object.apiVersion === 'v1' ? plural : `${plural}.gateway.networking.k8s.io`;
      const got = JSON.parse((await kubectl.run(['get', resource, object.metadata.name, ...ns, '-o', 'json'])).stdout);
      const content = object.apiVersion === 'v1' ? 'data' : 'spec';
      expect(got[content], `${object.kind} ${object.metadata.name}`).toMatchObject(object[content]);
    }
  },
  60_000,
);
