/**
 * The admission webhook's self-made certificate against the test API server, through real client-node clients over
 * HTTPS: two replicas racing for the Secret end with one Secret and the same pair; a valid Secret is never
 * rewritten; a pair near its end, or without the Service's names, is renewed by an update that only one replica
 * wins; the caBundle is patched only where it differs and only on the webhooks that call our Service; and the whole
 * keeper (startSelfSignedWebhook): two keepers serve the same certificate, the API server calls the webhook through
 * its `clientConfig.service` with the patched caBundle, a configuration re-applied with an empty caBundle gets it
 * back, and a configuration that does not exist yet is warned about and retried until it does.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { Writable } from 'node:stream';
import {
  AdmissionregistrationV1Api,
  CoreV1Api,
  KubeConfig,
  type V1Secret,
  type V1ValidatingWebhookConfiguration,
} from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { RESOURCES } from '../../src/dev/api-server/resources.js';
import { startApiServer, type ApiServer } from '../../src/dev/api-server/server.js';
import { startSelfSignedWebhook, type SelfSignedWebhook } from '../../src/http/webhook-self-signed.js';
import { ClusterCache } from '../../src/kube/cache.js';
import { ensureWebhookSecret, patchCaBundle, type WebhookCertOptions } from '../../src/kube/webhook-cert.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import { dnsNamesOf, judgePair, newPairData, RENEW_BEFORE_MS, serviceDnsNames } from '../../src/tls/webhook-pair.js';
import { kubectlFor, waitFor, type Kubectl } from '../support/kube-api.js';
import { freePort } from '../support/net.js';

const SECRETS = RESOURCES.find((r) => r.kind === 'Secret')!;
const CONFIGS = RESOURCES.find((r) => r.kind === 'ValidatingWebhookConfiguration')!;
const NS = 'ingress-actors';
const SERVICE = { namespace: NS, name: 'ingress-actors-admission' };
const HOOK = 'validate.nginx.ingress.kubernetes.io';

let api: ApiServer;
let dir: string;
let kubectl: Kubectl;
/** where the API server finds each Service's webhook (filled in as keepers listen) */
const routes = new Map<string, number>();
const writes: string[] = [];
/** runs once a request is answered: a test makes another replica's write land between two calls of one */
let afterRequest: ((method: string, url: string, status: number) => void) | null = null;

beforeAll(async () => {
  api = await startApiServer({
    seed: [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } }] as never,
    serviceNetwork: ({ namespace, name }) => {
      const port = routes.get(`${namespace}/${name}`);
      return port === undefined ? undefined : { host: '127.0.0.1', port };
    },
    onRequest: ({ method, url, status }) => {
      if (method !== 'GET') writes.push(`${method} ${url.split('?')[0]}`);
      afterRequest?.(method, url, status);
    },
  });
  dir = await mkdtemp(join(tmpdir(), 'ia-webhook-cert-'));
  await api.writeKubeconfig(join(dir, 'kubeconfig'));
  kubectl = kubectlFor(join(dir, 'kubeconfig'), join(dir, 'cache'));
});
afterAll(async () => {
  await api?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A replica's own clients (its own connections), as two pods would have. */
function replica(secret: string, extra: Partial<WebhookCertOptions> = {}): WebhookCertOptions {
  const kc = new KubeConfig();
  kc.loadFromString(api.kubeconfigText);
  return {
    core: kc.makeApiClient(CoreV1Api),
    admission: kc.makeApiClient(AdmissionregistrationV1Api),
    secret: { namespace: NS, name: secret },
    service: SERVICE,
    configuration: 'ingress-actors-admission',
    dnsNames: serviceDnsNames(SERVICE.namespace, SERVICE.name),
    renewBeforeMs: RENEW_BEFORE_MS,
    ...extra,
  };
}

const stored = (name: string) => api.registry.get(SECRETS, NS, name) as V1Secret;
/** secretWrites counts the Secret writes so far (a create's URL has no name: compare before and after). */
const secretWrites = () => writes.filter((w) => w.includes('/secrets')).length;
const pemOf = (secret: V1Secret, key: string) => Buffer.from(secret.data![key]!, 'base64').toString('utf8');

function configuration(name: string, caBundle?: string) {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name },
    webhooks: [
      {
        name: 'other.example.com',
        admissionReviewVersions: ['v1'],
        sideEffects: 'None',
        clientConfig: { url: 'https://127.0.0.1:1/other', caBundle: 'b3RoZXI=' },
        rules: [{ apiGroups: ['example.com'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['widgets'] }],
      },
      {
        name: HOOK,
        admissionReviewVersions: ['v1'],
        sideEffects: 'None',
        failurePolicy: 'Fail',
        clientConfig: {
          service: { ...SERVICE, port: 443, path: '/networking/v1/ingresses' },
          ...(caBundle === undefined ? {} : { caBundle }),
        },
        rules: [
          {
            apiGroups: ['networking.k8s.io'],
            apiVersions: ['v1'],
            operations: ['CREATE', 'UPDATE'],
            resources: ['ingresses'],
          },
        ],
      },
    ],
  };
}
const bundles = (name: string) =>
  ((api.registry.get(CONFIGS, undefined, name) as V1ValidatingWebhookConfiguration).webhooks ?? []).map(
    (w) => w.clientConfig.caBundle,
  );

describe('ensureWebhookSecret', () => {
  it('two replicas at once: one creates, the other loses with 409 and serves the winner’s pair', async () => {
    // Whichever read first, one creates and the other serves what it made.
    const [a, b] = await Promise.all([ensureWebhookSecret(replica('race')), ensureWebhookSecret(replica('race'))]);
    expect([a.action, b.action].sort()).toEqual(['created', 'kept']);
    expect(a.pair.certPem).toBe(b.pair.certPem);
    expect(a.pair.caPem).toBe(b.pair.caPem);
    expect(a.resourceVersion).toBe(b.resourceVersion);
    const secret = stored('race');
    expect(secret.type).toBe('kubernetes.io/tls');
    expect(Object.keys(secret.data!).sort()).toEqual(['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
    const leaf = new X509Certificate(pemOf(secret, 'tls.crt'));
    expect(dnsNamesOf(leaf)).toEqual([
      'ingress-actors-admission.ingress-actors.svc',
      'ingress-actors-admission.ingress-actors.svc.cluster.local',
    ]);
    expect(leaf.verify(new X509Certificate(pemOf(secret, 'ca.crt')).publicKey)).toBe(true);
  });

  it('the create lost to another replica’s (it landed between our read and our create): 409, and its pair is served', async () => {
    const theirs = await newPairData({}, serviceDnsNames(NS, SERVICE.name), Date.now());
    afterRequest = (method, url, status) => {
      if (method === 'GET' && url.includes('/secrets/lost') && status === 404) {
        afterRequest = null;
        api.registry.apply({
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'lost', namespace: NS },
          data: theirs,
        } as never);
      }
    };
    const before = secretWrites();
    const ensured = await ensureWebhookSecret(replica('lost'));
    expect(ensured.action).toBe('kept');
    expect(secretWrites() - before).toBe(1); // the create that got 409
    expect(ensured.pair.certPem).toBe(Buffer.from(theirs['tls.crt']!, 'base64').toString('utf8'));
  });

  it('the renewal lost to another replica’s (an update between our read and ours): 409, and the winner’s pair is served', async () => {
    await ensureWebhookSecret(replica('renewed-twice', { leafDays: 1, renewBeforeMs: 0 }));
    const theirs = await newPairData(stored('renewed-twice').data!, serviceDnsNames(NS, SERVICE.name), Date.now());
    afterRequest = (method, url, status) => {
      if (method === 'GET' && url.includes('/secrets/renewed-twice') && status === 200) {
        afterRequest = null;
        api.registry.update(SECRETS, NS, 'renewed-twice', { ...stored('renewed-twice'), data: theirs } as never);
      }
    };
    const before = secretWrites();
    const ensured = await ensureWebhookSecret(replica('renewed-twice'));
    expect(ensured.action).toBe('kept');
    expect(secretWrites() - before).toBe(1); // the update that got 409
    expect(ensured.pair.certPem).toBe(Buffer.from(theirs['tls.crt']!, 'base64').toString('utf8'));
    expect(ensured.resourceVersion).toBe(stored('renewed-twice').metadata!.resourceVersion);
  });

  it('never rewrites a valid Secret', async () => {
    const before = stored('race').metadata!.resourceVersion;
    const count = secretWrites();
    const again = await ensureWebhookSecret(replica('race'));
    expect(again.action).toBe('kept');
    expect(again.resourceVersion).toBe(before);
    expect(secretWrites()).toBe(count);
  });

  it('renews a pair near its end with a fresh resourceVersion, keeping the CA: one of two racing replicas wins', async () => {
    // A one-day pair (made with no renewal window, or it would not be served even once).
    const short = await ensureWebhookSecret(replica('short', { leafDays: 1, renewBeforeMs: 0 }));
    expect(short.action).toBe('created');
    const [a, b] = await Promise.all([ensureWebhookSecret(replica('short')), ensureWebhookSecret(replica('short'))]);
    expect([a.action, b.action].sort()).toEqual(['kept', 'renewed']);
    const renewed = a.action === 'renewed' ? a : b;
    expect(renewed.why).toMatch(/within the renewal window/);
    expect(a.pair.certPem).toBe(b.pair.certPem);
    expect(renewed.pair.certPem).not.toBe(short.pair.certPem);
    expect(Number(renewed.resourceVersion)).toBeGreaterThan(Number(short.resourceVersion));
    expect(stored('short').metadata!.resourceVersion).toBe(renewed.resourceVersion);
    expect(renewed.pair.notAfter - Date.now()).toBeGreaterThan(300 * 86_400_000);
    // Same CA: the caBundle need not change, so replicas still serving the old pair stay trusted.
    expect(renewed.pair.caPem).toBe(short.pair.caPem);
  });

  it('renews a pair that lacks the Service’s names, and one that does not parse', async () => {
    await ensureWebhookSecret(replica('names', { dnsNames: ['elsewhere.default.svc'] }));
    const renewed = await ensureWebhookSecret(replica('names'));
    expect(renewed.action).toBe('renewed');
    expect(renewed.why).toBe(
      'tls.crt is not valid for ingress-actors-admission.ingress-actors.svc, ' +
        'ingress-actors-admission.ingress-actors.svc.cluster.local',
    );
    api.registry.apply({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'junk', namespace: NS },
      data: { 'tls.crt': Buffer.from('not a certificate').toString('base64'), 'tls.key': 'eA==', 'ca.crt': 'eA==' },
    } as never);
    const fixed = await ensureWebhookSecret(replica('junk'));
    expect(fixed.action).toBe('renewed');
    expect(stored('junk').type).toBe('Opaque'); // a Secret's type is immutable: kept
    expect(judgePair(stored('junk').data!, { dnsNames: [], renewBeforeMs: 0, now: Date.now() }).ok).toBe(true);
  });
});

describe('patchCaBundle', () => {
  it('sets the caBundle of our Service’s webhooks only, writes nothing when it is right, and again after a re-apply', async () => {
    const options = replica('race', { configuration: 'patched' });
    const { pair } = await ensureWebhookSecret(options);
    const file = join(dir, 'patched.yaml');
    await writeFile(file, stringify(configuration('patched')));
    await kubectl.run(['apply', '-f', file]);
    const caBundle = Buffer.from(pair.caPem).toString('base64');

    expect(await patchCaBundle(options, pair.caPem)).toEqual({ matched: 1, patched: 1 });
    expect(bundles('patched')).toEqual(['b3RoZXI=', caBundle]);
    const count = writes.filter((w) => w.startsWith('PATCH') && w.endsWith('/patched')).length;
    expect(await patchCaBundle(replica('race', { configuration: 'patched' }), pair.caPem)).toEqual({
      matched: 1,
      patched: 0,
    });
    expect(writes.filter((w) => w.startsWith('PATCH') && w.endsWith('/patched')).length).toBe(count);

    // Re-applied with an empty caBundle, as a manifest that sets none explicitly.
    await writeFile(file, stringify(configuration('patched', '')));
    await kubectl.run(['apply', '-f', file]);
    expect(bundles('patched')).toEqual(['b3RoZXI=', '']);
    expect(await patchCaBundle(options, pair.caPem)).toEqual({ matched: 1, patched: 1 });
    expect(bundles('patched')).toEqual(['b3RoZXI=', caBundle]);
    // Its webhook calls the same Service as the next tests' configurations, trusting another CA: gone.
    api.registry.delete(CONFIGS, undefined, 'patched');
  });

  it('names the configuration when it is missing or has no webhook for our Service', async () => {
    await expect(patchCaBundle(replica('race', { configuration: 'absent' }), 'x')).rejects.toThrow(
      'ValidatingWebhookConfiguration absent does not exist (yet): its caBundle cannot be set',
    );
    api.registry.apply(configuration('elsewhere') as never);
    const elsewhere = replica('race', { configuration: 'elsewhere', service: { namespace: NS, name: 'other' } });
    await expect(patchCaBundle(elsewhere, 'x')).rejects.toThrow(
      'ValidatingWebhookConfiguration elsewhere has no webhook whose clientConfig.service is ingress-actors/other',
    );
    api.registry.delete(CONFIGS, undefined, 'elsewhere');
  });
});

/** peerCertificate is the certificate a webhook serves, trusting `ca` for the Service's name. */
function peerCertificate(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca, servername: `${SERVICE.name}.${NS}.svc` }, () => {
      const cert = socket.getPeerX509Certificate();
      socket.end();
      resolve(cert!.toString());
    });
    socket.on('error', reject);
  });
}

describe('startSelfSignedWebhook', () => {
  const keepers: SelfSignedWebhook[] = [];
  const lines: { level: number; msg: string; [k: string]: unknown }[] = [];
  const log = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(JSON.parse(chunk.toString('utf8')));
        done();
      },
    }),
  );
  const keeper = async (configurationName: string) => {
    const port = await freePort();
    const kc = new KubeConfig();
    kc.loadFromString(api.kubeconfigText);
    const started = startSelfSignedWebhook(
      {
        host: '127.0.0.1',
        port,
        selfSigned: { secret: { namespace: NS, name: 'kept' }, service: SERVICE, configuration: configurationName },
      },
      {
        cache: new ClusterCache(),
        options: { build: defaultBuildOptions, watchNamespace: null },
        log,
        kubeConfig: kc,
        timings: { recheckMs: 200, backoffBaseMs: 100, backoffMaxMs: 400 },
      },
    );
    keepers.push(started);
    return { started, port };
  };
  afterAll(async () => {
    await Promise.all(keepers.map((k) => k.close()));
  });

  it('two keepers serve one certificate; the API server calls the webhook by its Service with the patched caBundle', async () => {
    await kubectl.run(['apply', '-f', '-'], stringify(configuration('keepers')));
    const [a, b] = await Promise.all([keeper('keepers'), keeper('keepers')]);
    await Promise.all([a.started.listening, b.started.listening]);
    const caPem = pemOf(stored('kept'), 'ca.crt');
    expect(await peerCertificate(a.port, caPem)).toBe(await peerCertificate(b.port, caPem));
    expect(await peerCertificate(a.port, caPem)).toBe(new X509Certificate(pemOf(stored('kept'), 'tls.crt')).toString());
    await waitFor('the caBundle', () => bundles('keepers')[1] === Buffer.from(caPem).toString('base64'));
    expect(bundles('keepers')[0]).toBe('b3RoZXI=');

    // The API server reaches the webhook at its Service (routed to replica a), verifying it for NAME.NS.svc.
    routes.set(`${SERVICE.namespace}/${SERVICE.name}`, a.port);
    const bad = await kubectl.try(
      ['apply', '-f', '-'],
      stringify({
        apiVersion: 'networking.k8s.io/v1',
        kind: 'Ingress',
        metadata: {
          name: 'slow',
          namespace: 'default',
          // The keeper's cache is empty (no IngressClass): the legacy annotation makes it ours.
          annotations: {
            'kubernetes.io/ingress.class': 'nginx',
            'nginx.ingress.kubernetes.io/proxy-read-timeout': '30 seconds',
          },
        },
        spec: {
          rules: [
            {
              host: 'slow.example.com',
              http: {
                paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }],
              },
            },
          ],
        },
      }),
    );
    expect(bad.exitCode).not.toBe(0);
    expect(bad.stderr).toContain(`admission webhook "${HOOK}" denied the request: default/slow: `);

    // kubectl apply of the configuration with an empty caBundle: the next recheck sets it again.
    await kubectl.run(['apply', '-f', '-'], stringify(configuration('keepers', '')));
    expect(bundles('keepers')[1]).toBe('');
    await waitFor('the caBundle set again', () => bundles('keepers')[1] === Buffer.from(caPem).toString('base64'));
    // Another replica renews the pair: both keepers serve the new one within a recheck, without a restart.
    const renewedData = await newPairData(stored('kept').data!, serviceDnsNames(NS, SERVICE.name), Date.now());
    api.registry.update(SECRETS, NS, 'kept', { ...stored('kept'), data: renewedData } as never);
    const renewedCert = new X509Certificate(Buffer.from(renewedData['tls.crt']!, 'base64')).toString();
    expect(renewedCert).not.toBe(await peerCertificate(a.port, caPem));
    await waitFor('the renewed pair served by both', async () =>
      (await Promise.all([peerCertificate(a.port, caPem), peerCertificate(b.port, caPem)])).every(
        (c) => c === renewedCert,
      ),
    );
    // No key in any log line.
    expect(JSON.stringify(lines)).not.toContain('PRIVATE KEY');
    routes.clear();
    api.registry.delete(CONFIGS, undefined, 'keepers');
  }, 30_000);

  it('a configuration that does not exist yet: a warning naming it, retries, and the caBundle once it is applied', async () => {
    const { started, port } = await keeper('later');
    await started.listening;
    await waitFor('a warning', () =>
      lines.some(
        (l) => l.level === 40 && String(l.msg).includes('ValidatingWebhookConfiguration later does not exist'),
      ),
    );
    // The webhook serves meanwhile: the certificate is there, only the caBundle is not.
    const caPem = pemOf(stored('kept'), 'ca.crt');
    expect(await peerCertificate(port, caPem)).toContain('BEGIN CERTIFICATE');
    await kubectl.run(['apply', '-f', '-'], stringify(configuration('later')));
    await waitFor('the caBundle', () => bundles('later')[1] === Buffer.from(caPem).toString('base64'));
    const warned = lines.filter((l) => l.level === 40 && String(l.msg).includes('later does not exist'));
    expect(warned.length).toBeGreaterThanOrEqual(1);
    expect(warned[0]!.msg).toMatch(/^webhook caBundle not ready: .*; retrying in \d+(\.\d)? s$/);
  }, 30_000);
});
