/**
 * deploy/kustomize/components/webhook-api-server-only: a user's overlay (made here, outside deploy/,
 * as it would live in the user's own repository) that adds the component and its ConfigMap gets a
 * NetworkPolicy whose webhook port admits only the given range, keeps the traffic ports open, and
 * applies no ConfigMap; without the ConfigMap the real `kubectl kustomize` fails, naming it.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { KUBECTL } from '../support/kube-api.js';
import { DEPLOY, find, type Manifest } from './manifests.js';

/** PolicyRule is one NetworkPolicy ingress rule as YAML writes it. */
interface PolicyRule {
  readonly from?: unknown;
  readonly ports?: { port: number }[];
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ia-api-server-only-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** overlay writes a user's kustomization on the replace overlay plus the component, with the ConfigMap when cidr is given. */
async function overlay(cidr?: string): Promise<string> {
  const kustomize = relative(dir, join(DEPLOY, 'kustomize'));
  const generator =
    cidr === undefined
      ? ''
      : `configMapGenerator:
  - name: ingress-actors-api-server
    literals: [cidr=${cidr}]
    options:
      disableNameSuffixHash: true
      annotations: {config.kubernetes.io/local-config: "true"}
`;
  await writeFile(
    join(dir, 'kustomization.yaml'),
    `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ${kustomize}/overlays/replace-ingress-nginx
components:
  - ${kustomize}/components/webhook-api-server-only
${generator}`,
  );
  // The overlay lives outside deploy/, as a user's would (a remote base in practice): lift the
  // rule that keeps kustomize inside one folder tree.
  return execFileSync(KUBECTL, ['kustomize', '--load-restrictor', 'LoadRestrictionsNone', dir], {
    encoding: 'utf8',
    timeout: 20_000,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

it('narrows the webhook port to the API server’s range and keeps the traffic ports open to all', async () => {
  const yaml = await overlay('10.0.0.10/32');
  const objects = parseAllDocuments(yaml).map((d) => d.toJS() as Manifest);
  // As YAML has it (client-node's type renames `from` to `_from`).
  const policy = find<{ spec: { ingress: PolicyRule[] } }>(objects, 'NetworkPolicy', 'ingress-actors');
  const rules = policy.spec.ingress;
  const webhook = rules.find((r) => r.ports?.some((p) => p.port === 8443));
  expect(webhook?.from).toEqual([{ ipBlock: { cidr: '10.0.0.10/32' } }]);
  const traffic = rules.find((r) => r.ports?.some((p) => p.port === 443));
  expect(traffic?.from).toBeUndefined();
  expect(traffic?.ports?.map((p) => p.port)).toEqual([80, 443, 10254]);
  // The ConfigMap is the overlay's input, never applied.
  expect(objects.filter((o) => o.kind === 'ConfigMap').map((o) => o.metadata.name)).not.toContain(
    'ingress-actors-api-server',
  );
});

it('fails without the ConfigMap, naming it, rather than leave the port open', async () => {
  let message = '';
  try {
    await overlay();
  } catch (error) {
    message = String((error as { stderr?: string }).stderr ?? error);
  }
  expect(message).toContain('ingress-actors-api-server');
});
