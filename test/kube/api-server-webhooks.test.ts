/**
 * The test API server calling ValidatingWebhookConfigurations as kube-apiserver does, driven by the
 * machine's kubectl: the controller's own webhook (over HTTPS, judging against the API server's
 * objects) refuses a bad Ingress with its message; small HTTPS webhooks on loopback answer
 * nothing, hang, or are not there, to check failurePolicy Fail and Ignore, timeoutSeconds,
 * namespaceSelector, objectSelector, /status writes and dry runs.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { RESOURCES } from '../../src/dev/api-server/resources.js';
import { startApiServer, type ApiServer } from '../../src/dev/api-server/server.js';
import { createWebhookServer, WEBHOOK_PATH } from '../../src/http/webhook.js';
import { createLogger } from '../../src/log.js';
import { AdmissionJudge } from '../../src/model/admission.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import type { Snapshot } from '../../src/model/snapshot.js';
import { issueCertificate, type KeyPair } from '../../src/tls/issue.js';
import { freePort } from '../support/net.js';
import { ingress, ingressClass } from '../support/manifests.js';
import { kubectlFor, type Kubectl } from '../support/kube-api.js';
import { ingressWebhookConfiguration } from '../../src/http/webhook.js';

const CONFIGS = RESOURCES.find((r) => r.kind === 'ValidatingWebhookConfiguration')!;
const NAME = 'validate.nginx.ingress.kubernetes.io';

let api: ApiServer;
let dir: string;
let kubectl: Kubectl;
let ca: KeyPair;
let serving: KeyPair;
let controllerWebhook: Server;
let controllerUrl: string;
/** the small webhooks: each answers as its `mode` says, and counts its calls */
const fakes: { server: Server; url: string; calls: number }[] = [];
let hanging: { server: Server; url: string; calls: number };
let denying: { server: Server; url: string; calls: number };
let downUrl: string;

const of = <T>(kind: string) => api.registry.list(RESOURCES.find((r) => r.kind === kind)!, {}).items as unknown as T[];
const apiSnapshot = (): Snapshot => ({
  ingresses: of('Ingress'),
  ingressClasses: of('IngressClass'),
  services: of('Service'),
  endpointSlices: of('EndpointSlice'),
  secrets: of('Secret'),
  configMaps: [],
});

async function fake(answer: 'deny' | 'hang'): Promise<{ server: Server; url: string; calls: number }> {
  const entry = { server: null as unknown as Server, url: '', calls: 0 };
  entry.server = createServer({ key: serving.keyPem, cert: serving.certPem }, (req, res) => {
    entry.calls++;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (answer === 'hang') return;
      const review = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          apiVersion: 'admission.k8s.io/v1',
          kind: 'AdmissionReview',
          response: { uid: review.request.uid, allowed: false, status: { message: 'no, says the fake' } },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => entry.server.listen(0, '127.0.0.1', resolve));
  entry.url = `https://127.0.0.1:${(entry.server.address() as AddressInfo).port}/review`;
  fakes.push(entry);
  return entry;
}

function configuration(name: string, url: string, extra: Record<string, unknown> = {}) {
  return ingressWebhookConfiguration(name, { url, caBundle: Buffer.from(ca.certPem).toString('base64') }, extra);
}

const yaml = (...objects: object[]) => objects.map((o) => stringify(o)).join('---\n');
const register = (...configs: object[]) => kubectl.run(['apply', '-f', '-'], yaml(...configs));

beforeAll(async () => {
  ca = await issueCertificate({ commonName: 'webhook-ca', isCa: true });
  serving = await issueCertificate({ commonName: 'webhook', ipAddresses: ['127.0.0.1'], issuer: ca });
  dir = await mkdtemp(join(tmpdir(), 'api-server-webhooks-'));
  await writeFile(join(dir, 'tls.crt'), serving.certPem);
  await writeFile(join(dir, 'tls.key'), serving.keyPem, { mode: 0o600 });
  api = await startApiServer({
    port: 0,
    seed: [
      ingressClass(),
      {
        ...ingress('first', { 'a.example.com': [{ path: '/', service: 'app' }] }),
      },
    ],
  });
  const kubeconfig = join(dir, 'kubeconfig');
  await api.writeKubeconfig(kubeconfig);
  kubectl = kubectlFor(kubeconfig, join(dir, 'kube-cache'));
  const judge = new AdmissionJudge();
  controllerWebhook = createWebhookServer({
    certFile: join(dir, 'tls.crt'),
    keyFile: join(dir, 'tls.key'),
    log: createLogger({ level: 'silent' }),
    judge: (operation, candidate) => judge.judge(apiSnapshot(), { build: defaultBuildOptions }, operation, candidate),
  });
  await new Promise<void>((resolve) => controllerWebhook.listen(0, '127.0.0.1', resolve));
  controllerUrl = `https://127.0.0.1:${(controllerWebhook.address() as AddressInfo).port}${WEBHOOK_PATH}`;
  hanging = await fake('hang');
  denying = await fake('deny');
  downUrl = `https://127.0.0.1:${await freePort()}/review`;
});

afterAll(async () => {
  for (const server of [controllerWebhook, ...fakes.map((f) => f.server)]) {
    server?.closeAllConnections();
    server?.close();
  }
  await api?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

beforeEach(() => {
  for (const name of api.registry.list(CONFIGS, {}).items.map((o) => o.metadata.name))
    api.registry.delete(CONFIGS, undefined, name);
  for (const f of fakes) f.calls = 0;
});

const taken = () => yaml(ingress('second', { 'a.example.com': [{ path: '/', service: 'app' }] }));
const fresh = (name: string, host: string, namespace = 'default') =>
  yaml(ingress(name, { [host]: [{ path: '/', service: 'app' }] }, { namespace }));

describe('ValidatingWebhookConfigurations, through kubectl', () => {
  it('the controller webhook refuses a bad Ingress with its message; kubectl shows it, nothing is stored', async () => {
    await register(configuration('ingress-nginx-admission', controllerUrl));
    const result = await kubectl.try(['apply', '-f', '-'], taken());
    expect(result.exitCode).not.toBe(0);
    expect(result.stderr).toContain(
      `Error from server (BadRequest): error when creating "STDIN": admission webhook "${NAME}" denied the request: ` +
        'default/second: spec.rules[0].http.paths[0].path: host "a.example.com" and path "/" is already defined in ' +
        'ingress default/first',
    );
    expect((await kubectl.try(['get', 'ingress', 'second'])).exitCode).not.toBe(0);
  });

  it('the controller webhook admits a good Ingress, and its warnings reach kubectl', async () => {
    await register(configuration('ingress-nginx-admission', controllerUrl));
    const result = await kubectl.run(['apply', '-f', '-'], fresh('good', 'good.example.com'));
    expect(result.stdout).toContain('ingress.networking.k8s.io/good created');
    expect(result.stderr).toContain('Warning: default/good: spec.rules[0].http.paths[0].backend.service.name: Service');
    // An update is judged too: the same Ingress moved onto a taken host and path is refused.
    const update = await kubectl.try(['apply', '-f', '-'], fresh('good', 'a.example.com'));
    expect(update.stderr).toContain('error when applying patch');
    expect(update.stderr).toContain('is already defined in ingress default/first');
  });

  it('failurePolicy Fail: a webhook that is not there refuses the write (500)', async () => {
    await register(configuration('down', downUrl));
    const result = await kubectl.try(['apply', '-f', '-'], fresh('down-fail', 'down.example.com'));
    expect(result.stderr).toContain(
      `Error from server (InternalError): error when creating "STDIN": Internal error occurred: failed calling ` +
        `webhook "${NAME}": failed to call webhook: Post "${downUrl}?timeout=10s"`,
    );
    expect(result.stderr).toContain('ECONNREFUSED');
  });

  it('failurePolicy Ignore: a webhook that is not there is passed over', async () => {
    await register(configuration('down', downUrl, { failurePolicy: 'Ignore' }));
    const result = await kubectl.run(['apply', '-f', '-'], fresh('down-ignore', 'down-ignore.example.com'));
    expect(result.stdout).toContain('created');
  });

  it('timeoutSeconds: a webhook that does not answer in time fails the call', async () => {
    await register(configuration('hangs', hanging.url, { timeoutSeconds: 1 }));
    const result = await kubectl.try(['apply', '-f', '-'], fresh('slow', 'slow.example.com'));
    expect(result.stderr).toContain(`Post "${hanging.url}?timeout=1s": context deadline exceeded`);
    expect(hanging.calls).toBe(1);
    await register(configuration('hangs', hanging.url, { timeoutSeconds: 1, failurePolicy: 'Ignore' }));
    expect((await kubectl.run(['apply', '-f', '-'], fresh('slow', 'slow.example.com'))).stdout).toContain('created');
  });

  it('namespaceSelector and objectSelector choose which writes are sent', async () => {
    await kubectl.run(['create', 'namespace', 'checked']);
    await kubectl.run(['label', 'namespace', 'checked', 'admission=checked']);
    await kubectl.run(['create', 'namespace', 'unchecked']);
    await register(
      configuration('fake', denying.url, { namespaceSelector: { matchLabels: { admission: 'checked' } } }),
    );
    const inChecked = await kubectl.try(['apply', '-f', '-'], fresh('x', 'x.example.com', 'checked'));
    expect(inChecked.stderr).toContain(`admission webhook "${NAME}" denied the request: no, says the fake`);
    expect((await kubectl.run(['apply', '-f', '-'], fresh('x', 'x.example.com', 'unchecked'))).stdout).toContain(
      'created',
    );
    expect(denying.calls).toBe(1);
    await register(
      configuration('fake', denying.url, {
        objectSelector: { matchExpressions: [{ key: 'team', operator: 'In', values: ['a'] }] },
      }),
    );
    // (YAML 1.1, as kubectl reads it, takes a bare y, on or yes for a boolean: hence these names.)
    expect((await kubectl.run(['apply', '-f', '-'], fresh('selected', 'selected.example.com'))).stdout).toContain(
      'created',
    );
    const labelled = await kubectl.try(['label', 'ingress', 'selected', 'team=a']);
    expect(labelled.stderr).toContain('no, says the fake');
    expect(denying.calls).toBe(1 + 1);
  });

  it('a /status write is not sent to a rule for ingresses; kubectl --dry-run=server is, when sideEffects is None', async () => {
    await register(configuration('fake', denying.url));
    const status = await kubectl.try([
      'patch',
      'ingress',
      'first',
      '--subresource=status',
      '--type=merge',
      '-p',
      '{"status":{"loadBalancer":{"ingress":[{"ip":"10.0.0.1"}]}}}',
    ]);
    expect(status.stderr).toBe('');
    expect(denying.calls).toBe(0);
    const dry = await kubectl.try(['apply', '--dry-run=server', '-f', '-'], fresh('z', 'z.example.com'));
    expect(dry.stderr).toContain('no, says the fake');
    await register(configuration('fake', denying.url, { sideEffects: 'Some' }));
    const refused = await kubectl.try(['apply', '--dry-run=server', '-f', '-'], fresh('z', 'z.example.com'));
    expect(refused.stderr).toContain(`admission webhook "${NAME}" does not support dry run`);
  });
});
