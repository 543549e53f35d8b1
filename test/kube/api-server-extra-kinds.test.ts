/**
 * The `extraKinds` option of the test API server: the added kinds are in every discovery document
 * kubectl reads (/api/v1, /apis, /apis/<group>, /apis/<group>/<version>) and in the OpenAPI v3
 * index, their REST paths route, seeds may use them; a server without them knows none of it.
 * (kubectl itself against DEPLOY_RESOURCES: test/deploy/manifests.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { discoveryDocument } from '../../src/dev/api-server/discovery.js';
import { openApiDocument } from '../../src/dev/api-server/openapi.js';
import {
  DEFAULT_TABLE,
  DEPLOY_RESOURCES,
  RESOURCES,
  ResourceTable,
  type ResourceDef,
} from '../../src/dev/api-server/resources.js';
import { parseTarget } from '../../src/dev/api-server/router.js';
import { startApiServer } from '../../src/dev/api-server/server.js';

type ResourceList = { resources: { name: string; kind: string; namespaced: boolean; shortNames?: string[] }[] };
type GroupList = { groups: { name: string; preferredVersion: { groupVersion: string } }[] };

const table = new ResourceTable(DEPLOY_RESOURCES);
const names = (doc: object | undefined) => (doc as ResourceList | undefined)?.resources.map((r) => r.name) ?? [];

describe('ResourceTable', () => {
  it('serves RESOURCES first, then the extra kinds, once each', () => {
    expect(table.resources.slice(0, RESOURCES.length)).toEqual(RESOURCES);
    expect(table.resources.slice(RESOURCES.length)).toEqual(DEPLOY_RESOURCES);
    expect(new ResourceTable([...DEPLOY_RESOURCES, ...DEPLOY_RESOURCES, RESOURCES[0]!]).resources).toHaveLength(
      RESOURCES.length + DEPLOY_RESOURCES.length,
    );
    expect(DEFAULT_TABLE.resources).toEqual(RESOURCES);
  });

  it('refuses a kind it already serves under another definition, and a plural taken in the same group version', () => {
    const copy: ResourceDef = { ...RESOURCES.find((r) => r.kind === 'Secret')! };
    expect(() => new ResourceTable([copy])).toThrow(/already serves v1 Secret/);
    expect(() => new ResourceTable([{ ...copy, kind: 'Secrets2' }])).toThrow(
      /v1 secrets is already the resource of Secret/,
    );
  });
});

describe('discovery with DEPLOY_RESOURCES', () => {
  it('lists the core extra kinds under /api/v1', () => {
    const core = discoveryDocument('/api/v1', '127.0.0.1', table) as ResourceList;
    expect(core.resources).toContainEqual(
      expect.objectContaining({
        name: 'serviceaccounts',
        kind: 'ServiceAccount',
        namespaced: true,
        shortNames: ['sa'],
      }),
    );
    expect(names(discoveryDocument('/api/v1', '127.0.0.1'))).not.toContain('serviceaccounts');
  });

  it('lists the new groups under /apis, and each group and group version', () => {
    const groups = (discoveryDocument('/apis', '127.0.0.1', table) as GroupList).groups.map(
      (g) => g.preferredVersion.groupVersion,
    );
    expect(groups).toEqual(
      expect.arrayContaining(['networking.k8s.io/v1', 'apps/v1', 'policy/v1', 'rbac.authorization.k8s.io/v1']),
    );
    expect((discoveryDocument('/apis', '127.0.0.1') as GroupList).groups.map((g) => g.name)).not.toContain('apps');
    expect(discoveryDocument('/apis/apps', '127.0.0.1', table)).toMatchObject({ kind: 'APIGroup', name: 'apps' });
    expect(names(discoveryDocument('/apis/apps/v1', '127.0.0.1', table))).toEqual([
      'deployments',
      'deployments/status',
    ]);
    expect(names(discoveryDocument('/apis/policy/v1', '127.0.0.1', table))).toEqual([
      'poddisruptionbudgets',
      'poddisruptionbudgets/status',
    ]);
    expect(names(discoveryDocument('/apis/rbac.authorization.k8s.io/v1', '127.0.0.1', table))).toEqual([
      'clusterroles',
      'clusterrolebindings',
      'roles',
      'rolebindings',
    ]);
    expect(discoveryDocument('/apis/apps/v1', '127.0.0.1')).toBeUndefined();
  });

  it('publishes an OpenAPI v3 document per new group version, with the PATCH kubectl looks for', () => {
    const index = openApiDocument('/openapi/v3', table) as { paths: Record<string, unknown> };
    expect(Object.keys(index.paths)).toEqual(
      expect.arrayContaining(['api/v1', 'apis/apps/v1', 'apis/policy/v1', 'apis/rbac.authorization.k8s.io/v1']),
    );
    expect(Object.keys((openApiDocument('/openapi/v3') as { paths: Record<string, unknown> }).paths)).not.toContain(
      'apis/apps/v1',
    );
    const apps = openApiDocument('/openapi/v3/apis/apps/v1', table) as {
      paths: Record<string, { patch: { 'x-kubernetes-group-version-kind': object } }>;
    };
    expect(
      apps.paths['/apis/apps/v1/namespaces/{namespace}/deployments/{name}']?.patch['x-kubernetes-group-version-kind'],
    ).toEqual({ group: 'apps', version: 'v1', kind: 'Deployment' });
  });

  it('routes the new REST paths', () => {
    expect(parseTarget('/apis/apps/v1/namespaces/a/deployments/web/status', table)).toMatchObject({
      resource: { kind: 'Deployment' },
      namespace: 'a',
      name: 'web',
      subresource: 'status',
    });
    expect(parseTarget('/apis/rbac.authorization.k8s.io/v1/clusterroles/x', table)).toMatchObject({
      resource: { kind: 'ClusterRole' },
      name: 'x',
    });
    expect(parseTarget('/apis/apps/v1/namespaces/a/deployments/web')).toBeUndefined();
  });
});

describe('startApiServer({ extraKinds })', () => {
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'extra' },
    spec: { replicas: 1 },
    status: { replicas: 9 },
  };

  it(
    'takes seeds of the extra kinds (generation tracked, client ' +
      'status dropped), and deletes them with their namespace',
    async () => {
      const server = await startApiServer({
        extraKinds: DEPLOY_RESOURCES,
        seed: [deployment],
        namespaceDeletionDelayMs: 10,
      });
      try {
        const deployments = server.resources.findByKind('apps/v1', 'Deployment')!;
        const stored = server.registry.get(deployments, 'extra', 'web');
        expect(stored.metadata.generation).toBe(1);
        expect(stored.status).toBeUndefined();
        const namespaces = server.resources.findByKind('v1', 'Namespace')!;
        server.registry.delete(namespaces, undefined, 'extra');
        await new Promise((r) => setTimeout(r, 50));
        expect(server.registry.list(deployments).items).toEqual([]);
      } finally {
        await server.close();
      }
    },
  );

  it('without them refuses such a seed', async () => {
    await expect(startApiServer({ seed: [deployment] })).rejects.toThrow(
      /no resource is served for apps\/v1 Deployment/,
    );
  });
});
