/**
 * The RBAC of deploy/kustomize/components/webhook-self-signed against the API calls the controller really makes for
 * its webhook certificate. The replace-ingress-nginx overlay is rendered by the real `kubectl kustomize`; its objects
 * seed the test API server (the ValidatingWebhookConfiguration without a caBundle); the controller runs with the
 * rendered Deployment's flags and downward-API environment: it creates the Secret, patches the caBundle, and renews
 * the pair once another writer left one that ends tomorrow. Every request is recorded and then: each is allowed by
 * the overlay's Roles and ClusterRoles, and each verb (and name) of the component's rules was used.
 */
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1ClusterRole, V1Role, V1Secret, V1ValidatingWebhookConfiguration } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { findResourceByKind } from '../../src/dev/api-server/resources.js';
import { startApiServer, type ApiServer } from '../../src/dev/api-server/server.js';
import { parseControllerFlags } from '../../src/cli/controller-flags.js';
import { startController } from '../../src/main.js';
import { newPairData, serviceDnsNames } from '../../src/tls/webhook-pair.js';
import { waitFor } from '../support/cluster.js';
import { KUBECTL } from '../support/kube-api.js';
import { freePort } from '../support/net.js';
import { controllerContainer, DEPLOY, type Manifest } from './manifests.js';
import { allows, type Call, type Grant, toCall } from './rbac-calls.js';

const objects = parseAllDocuments(
  execFileSync(KUBECTL, ['kustomize', join(DEPLOY, 'kustomize/overlays/replace-ingress-nginx')], {
    encoding: 'utf8',
    timeout: 20_000,
  }),
).map((d) => d.toJS() as Manifest);
const container = controllerContainer(objects);
const roles = objects.filter((m) => m.kind === 'Role') as unknown as V1Role[];
const clusterRoles = objects.filter((m) => m.kind === 'ClusterRole') as unknown as V1ClusterRole[];
const grantsOf = (role: V1Role | V1ClusterRole, namespace: string | null, from: string): Grant[] =>
  (role.rules ?? []).map((rule) => ({ rule, namespace, from: `${from} ${role.metadata!.name}` }));
const grants: Grant[] = [
  ...clusterRoles.flatMap((r) => grantsOf(r, null, 'ClusterRole')),
  ...roles.flatMap((r) => grantsOf(r, r.metadata!.namespace!, 'Role')),
];
/** the component's own rules: every verb and name of these must have been used */
const webhookGrants = grants.filter((g) => g.from.endsWith(' ingress-actors-webhook'));

const OWN = /^--(http-port|https-port|healthz-port|config-dir|validating-webhook)(=|$)/;
const SECRETS = findResourceByKind('v1', 'Secret')!;
const CONFIGS = findResourceByKind('admissionregistration.k8s.io/v1', 'ValidatingWebhookConfiguration')!;
const NS = 'ingress-actors';
const NAME = 'ingress-actors-admission';
const calls: Call[] = [];
let api: ApiServer;
let dir: string;

const secret = () => api.registry.get(SECRETS, NS, NAME) as V1Secret;
const leafEnd = () =>
  Date.parse(new X509Certificate(Buffer.from(secret().data!['tls.crt']!, 'base64')).validTo) - Date.now();

beforeAll(async () => {
  const served = objects.filter((m) => findResourceByKind(m.apiVersion, m.kind));
  api = await startApiServer({
    seed: served as never,
    onRequest: ({ method, url }) => {
      const call = toCall(method, url);
      if (call) calls.push(call);
    },
  });
  dir = await mkdtemp(join(tmpdir(), 'ia-rbac-webhook-'));
  await api.writeKubeconfig(join(dir, 'kubeconfig'));
  const parsed = parseControllerFlags([
    ...(container.args ?? []).slice(1).filter((a) => !OWN.test(a)),
    `--validating-webhook=127.0.0.1:${await freePort()}`,
    `--kubeconfig=${join(dir, 'kubeconfig')}`,
    `--http-port=${await freePort()}`,
    `--https-port=${await freePort()}`,
    `--healthz-port=${await freePort()}`,
    `--config-dir=${join(dir, 'nginx')}`,
  ]);
  if (!('config' in parsed)) throw new Error('help');
  const env = { POD_NAME: 'ingress-actors-6b7c9-a', POD_NAMESPACE: NS, NODE_NAME: 'node-a' };
  const controller = await startController(parsed.config, pino({ level: process.env.TEST_LOG ?? 'silent' }), {
    env,
    webhookCertTimings: { recheckMs: 300 },
  });
  try {
    const bundle = () =>
      (api.registry.get(CONFIGS, undefined, NAME) as V1ValidatingWebhookConfiguration).webhooks?.[0]?.clientConfig
        .caBundle;
    await waitFor('the caBundle set', () => bundle() !== undefined, 20_000);
    expect(bundle()).toBe(secret().data!['ca.crt']);
    // Another writer leaves a pair that ends tomorrow: the controller renews it (an update of the Secret).
    const tomorrow = await newPairData(secret().data!, serviceDnsNames(NS, NAME), Date.now(), 1);
    api.registry.update(SECRETS, NS, NAME, { ...secret(), data: tomorrow } as never);
    expect(leafEnd()).toBeLessThan(2 * 86_400_000);
    await waitFor('the pair renewed', () => leafEnd() > 300 * 86_400_000, 20_000);
  } finally {
    controller.stop();
    expect(await controller.exitCode).toBe(0);
  }
}, 90_000);

afterAll(async () => {
  await api?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('deploy/kustomize/components/webhook-self-signed RBAC', () => {
  it('the overlay’s Roles and ClusterRoles allow every API call the controller made', () => {
    const denied = calls.filter((call) => !grants.some((g) => allows(g, call))).map((c) => c.line);
    expect([...new Set(denied)]).toEqual([]);
  });

  it('grants nothing the controller did not use: every verb of the component’s rules, on every resource and name', () => {
    expect(webhookGrants.map((g) => g.from).sort()).toEqual([
      'ClusterRole ingress-actors-webhook',
      'Role ingress-actors-webhook',
      'Role ingress-actors-webhook',
    ]);
    const unused: string[] = [];
    for (const grant of webhookGrants) {
      for (const resource of grant.rule.resources ?? []) {
        for (const verb of grant.rule.verbs) {
          if (!calls.some((c) => c.resource === resource && c.verb === verb && allows(grant, c, verb, resource)))
            unused.push(`${grant.from}: ${verb} ${resource}`);
          for (const name of grant.rule.resourceNames ?? [])
            if (!calls.some((c) => c.resource === resource && c.verb === verb && c.name === name && allows(grant, c)))
              unused.push(`${grant.from}: ${verb} ${resource} ${name}`);
        }
      }
    }
    expect(unused).toEqual([]);
  });

  it('touched only its one Secret and its one configuration', () => {
    const certificateCalls = calls.filter(
      (c) => (c.resource === 'secrets' && !['list', 'watch'].includes(c.verb)) || c.resource === CONFIGS.plural,
    );
    expect(
      new Set(certificateCalls.map((c) => `${c.verb} ${c.resource} ${c.namespace ?? ''}/${c.name ?? ''}`)),
    ).toEqual(
      new Set([
        `create secrets ${NS}/`,
        `get secrets ${NS}/${NAME}`,
        `update secrets ${NS}/${NAME}`,
        `get validatingwebhookconfigurations /${NAME}`,
        `patch validatingwebhookconfigurations /${NAME}`,
      ]),
    );
  });
});
