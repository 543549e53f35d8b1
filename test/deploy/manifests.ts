/**
 * Reading deploy/: every YAML document of deploy/kubernetes/ (in kubectl's order), the
 * Deployment's container and its flags. (The kinds the test API server must serve to take
 * `kubectl apply -f deploy/kubernetes/` are its DEPLOY_RESOURCES, src/dev/api-server/resources.ts.)
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Container, V1Deployment } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';

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
