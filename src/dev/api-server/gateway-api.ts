/**
 * The Gateway API's standard-channel CRDs as vendored in deploy/gateway-api/standard-install.yaml,
 * as manifests to seed a test API server with (`startApiServer({ seed: gatewayApiCrds() })`): the
 * demo does so, and tests that need the Gateway kinds served without running kubectl can too.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseManifests } from '../../manifests/load.js';
import type { KubeObject } from '../../model/snapshot.js';
import { PROJECT_ROOT } from '../../project-root.js';

/** GATEWAY_API_INSTALL is the vendored standard-install.yaml (Gateway API v1.6.1, standard channel). */
export const GATEWAY_API_INSTALL = join(PROJECT_ROOT, 'deploy', 'gateway-api', 'standard-install.yaml');

let parsed: readonly KubeObject[] | undefined;

/** gatewayApiCrds returns the file's objects (its CRDs and the ValidatingAdmissionPolicy beside them), read once. */
export function gatewayApiCrds(): KubeObject[] {
  parsed ??= parseManifests(readFileSync(GATEWAY_API_INSTALL, 'utf8'), GATEWAY_API_INSTALL);
  return structuredClone([...parsed]);
}
