/**
 * Discovery documents: /version, /api, /apis, /api/v1, /apis/<group> and /apis/<group>/<version>,
 * in the legacy (unaggregated) form. kubectl 1.32 asks for aggregated discovery first through its
 * Accept header; answering `application/json` with the plain documents makes client-go fall back
 * to walking each group version, which is what a server without aggregation is allowed to do.
 */
import { compareVersions } from './crd.js';
import {
  apiVersionOf,
  DEFAULT_TABLE,
  VERBS,
  type GroupVersion,
  type ResourceDef,
  type ResourceTable,
} from './resources.js';

/** SERVER_VERSION is what /version reports; the gcloud kubectl dispatcher picks its binary by it. */
export const SERVER_VERSION = {
  major: '1',
  minor: '32',
  gitVersion: 'v1.32.4',
  gitCommit: '59526cd4867447956156ae3a602fcbac10a2c335',
  gitTreeState: 'clean',
  buildDate: '2025-04-22T16:02:27Z',
  goVersion: 'go1.23.6',
  compiler: 'gc',
  platform: 'linux/amd64',
};

function apiResources(resources: readonly ResourceDef[]): object[] {
  const out: object[] = [];
  for (const r of resources) {
    const entry: Record<string, unknown> = {
      name: r.plural,
      singularName: r.singular,
      namespaced: r.namespaced,
      kind: r.kind,
      verbs: [...VERBS],
    };
    if (r.shortNames.length > 0) entry.shortNames = [...r.shortNames];
    if (r.categories.length > 0) entry.categories = [...r.categories];
    out.push(entry);
    if (r.hasStatus)
      out.push({
        name: `${r.plural}/status`,
        singularName: '',
        namespaced: r.namespaced,
        kind: r.kind,
        verbs: ['get', 'patch', 'update'],
      });
  }
  return out;
}

/** groupDoc is a group's APIGroup: its versions in kube-apiserver's order, the first preferred. */
function groupDoc(group: string, groupVersions: readonly GroupVersion[]): object {
  const versions = groupVersions
    .filter((g) => g.group === group)
    .map((g) => g.version)
    .sort(compareVersions)
    .map((version) => ({ groupVersion: `${group}/${version}`, version }));
  return { kind: 'APIGroup', apiVersion: 'v1', name: group, versions, preferredVersion: versions[0] };
}

/**
 * discoveryDocument returns the document for a discovery path, or undefined when the path is
 * not a discovery path. `serverAddress` is the host:port clients reached the server on; `table`
 * is what the server serves (its extra kinds too).
 */
export function discoveryDocument(
  path: string,
  serverAddress: string,
  table: ResourceTable = DEFAULT_TABLE,
): object | undefined {
  let end = path.length;
  while (end > 0 && path[end - 1] === '/') end--; // not /\/+$/, which is quadratic on `////…x`
  const trimmed = path.slice(0, end) || '/';
  if (trimmed === '/version') return SERVER_VERSION;
  if (trimmed === '/api') {
    return {
      kind: 'APIVersions',
      versions: ['v1'],
      serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
    };
  }
  if (trimmed === '/api/v1')
    return { kind: 'APIResourceList', groupVersion: 'v1', resources: apiResources(table.coreResources()) };
  const groups = table.groupVersions();
  if (trimmed === '/apis') {
    const names = [...new Set(groups.map((g) => g.group))];
    return { kind: 'APIGroupList', apiVersion: 'v1', groups: names.map((name) => groupDoc(name, groups)) };
  }
  const match = /^\/apis\/([^/]+)(?:\/([^/]+))?$/.exec(trimmed);
  if (!match) return undefined;
  const [, group, version] = match;
  const found = groups.find((g) => g.group === group && (version === undefined || g.version === version));
  if (!found) return undefined;
  if (version === undefined) return groupDoc(found.group, groups);
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: apiVersionOf(found.resources[0]!),
    resources: apiResources(found.resources),
  };
}
