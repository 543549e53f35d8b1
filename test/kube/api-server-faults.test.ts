/**
 * The API server's injected request faults: every request answers a chosen error Status, or
 * hangs until the fault is cleared (then its connection is destroyed); open watches are left
 * alone; clearing serves normally again.
 */
import { KubeConfig, KubernetesObjectApi, Watch } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { startApiServer, type ApiServer } from '../../src/dev/api-server/server.js';
import { failure, testIngress } from '../support/kube-api.js';

let server: ApiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function setup() {
  server = await startApiServer({ seed: [testIngress('a', 'default', 'a.example.com')] as never });
  const kc = new KubeConfig();
  kc.loadFromString(server.kubeconfigText);
  return { api: server, client: kc.makeApiClient(KubernetesObjectApi), kc };
}

describe('failRequests', () => {
  it('answers every request with the chosen Status until cleared', async () => {
    const { api, client } = await setup();
    api.failRequests({ status: 500 });
    expect(await failure(client.list('networking.k8s.io/v1', 'Ingress'))).toEqual({
      code: 500,
      reason: 'InternalError',
      kind: 'Status',
    });
    expect(
      await failure(
        client.read({
          apiVersion: 'networking.k8s.io/v1',
          kind: 'Ingress',
          metadata: { name: 'a', namespace: 'default' },
        }),
      ),
    ).toMatchObject({ code: 500 });
    expect(api.failRequests({ status: 503 })).toBe(2);
    expect(await failure(client.list('networking.k8s.io/v1', 'Ingress'))).toMatchObject({
      code: 503,
      reason: 'ServiceUnavailable',
    });
    expect(api.failRequests(null)).toBe(1);
    expect((await client.list('networking.k8s.io/v1', 'Ingress')).items.map((i) => i.metadata?.name)).toEqual(['a']);
  });

  it('holds requests while hanging and destroys their connections when cleared', async () => {
    const { api, client } = await setup();
    api.failRequests({ hang: true });
    let settled = false;
    const pending = client.list('networking.k8s.io/v1', 'Ingress').finally(() => (settled = true));
    await new Promise((r) => setTimeout(r, 300));
    expect(settled).toBe(false);
    expect(api.failRequests(null)).toBe(1);
    await expect(pending).rejects.toThrow();
    expect((await client.list('networking.k8s.io/v1', 'Ingress')).items).toHaveLength(1);
  });

  it('leaves open watch streams alone', async () => {
    const { api, kc } = await setup();
    const seen: string[] = [];
    const watch = await new Watch(kc).watch(
      '/apis/networking.k8s.io/v1/ingresses',
      {},
      (type, obj: { metadata?: { name?: string } }) => void seen.push(`${type} ${obj.metadata?.name}`),
      () => undefined,
    );
    await new Promise((r) => setTimeout(r, 200));
    api.failRequests({ status: 500 });
    api.registry.apply(testIngress('b', 'default', 'b.example.com') as never);
    const deadline = Date.now() + 5000;
    while (!seen.includes('ADDED b') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(seen).toContain('ADDED b');
    expect(api.openWatches()).toBe(1);
    watch.abort();
    api.failRequests(null);
  });
});
