/**
 * Reading deploy/: every YAML document of deploy/kubernetes/ (in kubectl's order), the
 * Deployment's container and its flags, and the kinds the test API server must serve to take
 * `kubectl apply -f deploy/kubernetes/`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Container, V1Deployment } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { RESOURCES, type ResourceDef } from '../../src/kube/api-server/resources.js';

/** DEPLOY is the deploy/ folder; MANIFESTS its kubernetes/ folder. */
export const DEPLOY = new URL('../../deploy/', import.meta.url).pathname;
export const MANIFESTS = join(DEPLOY, 'kubernetes');

/** Manifest is one document with the file it came from. */
export interface Manifest {
  readonly file: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  readonly [field: string]: unknown;
}

/** loadManifests parses every document of every .yaml file, in file-name order (what kubectl apply -f DIR does). */
export function loadManifests(): Manifest[] {
  return readdirSync(MANIFESTS)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .flatMap((file) =>
      parseAllDocuments(readFileSync(join(MANIFESTS, file), 'utf8')).map((doc) => {
        if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]!.message}`);
        return { file, ...(doc.toJS() as object) } as Manifest;
      }),
    );
}

/** find returns the one manifest of a kind (and name, if given). */
export function find<T = Manifest>(manifests: readonly Manifest[], kind: string, name?: string): T {
  const found = manifests.filter((m) => m.kind === kind && (name === undefined || m.metadata.name === name));
  if (found.length !== 1) throw new Error(`expected one ${kind}${name ? ` ${name}` : ''}, found ${found.length}`);
  return found[0] as T;
}

/** controllerContainer is the Deployment's `controller` container. */
export function controllerContainer(manifests: readonly Manifest[]): V1Container {
  const deployment = find<V1Deployment>(manifests, 'Deployment');
  const container = deployment.spec?.template.spec?.containers.find((c) => c.name === 'controller');
  if (!container) throw new Error('no controller container');
  return container;
}

/** flagValue reads `--name=value` (or `--name value`) from an argument list. */
export function flagValue(args: readonly string[], name: string): string | undefined {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === `--${name}`) return args[i + 1];
    if (args[i]!.startsWith(`--${name}=`)) return args[i]!.slice(name.length + 3);
  }
  return undefined;
}

const def = (group: string, version: string, kind: string, plural: string, namespaced: boolean, shortNames: string[] = [], hasStatus = false): ResourceDef => ({
  group, version, kind, plural, singular: kind.toLowerCase(), namespaced, shortNames, categories: [], hasStatus,
});

/**
 * serveDeployKinds adds to the test API server's resource table (in this test file's module
 * graph only) the kinds deploy/ holds that the controller never reads: ServiceAccount, RBAC,
 * Deployment, PodDisruptionBudget. The server stores them like any other kind; its OpenAPI does
 * not describe them, so kubectl runs with --validate=false (the schemas are checked separately).
 */
export function serveDeployKinds(): void {
  const extra = [
    def('', 'v1', 'ServiceAccount', 'serviceaccounts', true, ['sa']),
    def('apps', 'v1', 'Deployment', 'deployments', true, ['deploy'], true),
    def('policy', 'v1', 'PodDisruptionBudget', 'poddisruptionbudgets', true, ['pdb'], true),
    def('rbac.authorization.k8s.io', 'v1', 'ClusterRole', 'clusterroles', false),
    def('rbac.authorization.k8s.io', 'v1', 'ClusterRoleBinding', 'clusterrolebindings', false),
    def('rbac.authorization.k8s.io', 'v1', 'Role', 'roles', true),
    def('rbac.authorization.k8s.io', 'v1', 'RoleBinding', 'rolebindings', true),
  ];
  const table = RESOURCES as ResourceDef[];
  for (const r of extra) if (!table.some((t) => t.kind === r.kind && t.group === r.group)) table.push(r);
}
