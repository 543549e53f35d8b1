/**
 * What the Gateway API controller tests share: the CRDs installed into a test cluster with the controller's watchers
 * running and our GatewayClass applied, the objects a stream test needs (a Service, its EndpointSlice, a route), a
 * TCP echo that says who it is, and the status of a route or Gateway as the tests compare it.
 */
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { GATEWAY_API_INSTALL } from '../../src/dev/api-server/gateway-api.js';
import { type Cluster, waitFor } from './cluster.js';
import { kubectlFor } from './kube-api.js';

export const GROUP = 'gateway.networking.k8s.io';
/** the controller's default --gateway-controller-name */
export const OURS = 'ingress-actors.io/gateway-controller';
/** the GatewayClass installGatewayApi applies */
export const GATEWAY_CLASS = 'ingress-actors';

/**
 * installGatewayApi applies the standard-channel CRDs, waits until the controller watches `kinds`, applies our
 * GatewayClass, and gives a client for the custom objects.
 */
export async function installGatewayApi(cluster: Cluster, kinds: readonly string[]): Promise<CustomObjectsApi> {
  const kc = new KubeConfig();
  kc.loadFromString(cluster.api.kubeconfigText);
  const kubectl = kubectlFor(join(cluster.dir, 'kubeconfig'), join(cluster.dir, 'kube-cache'));
  await kubectl.run(['apply', '-f', GATEWAY_API_INSTALL]);
  for (const kind of kinds)
    await waitFor(
      `${kind} watched`,
      () => JSON.stringify(cluster.actor(`watcher.${kind}`)?.value) === '{"running":"watching"}',
      10_000,
    );
  await cluster.apply({
    apiVersion: `${GROUP}/v1`,
    kind: 'GatewayClass',
    metadata: { name: GATEWAY_CLASS },
    spec: { controllerName: OURS },
  });
  return kc.makeApiClient(CustomObjectsApi);
}

/** startEcho is a TCP echo server on `ip:port` that first says who it is (`echo <ip>`). */
export async function startEcho(port: number, ip: string): Promise<Server> {
  const server = createServer((socket) => {
    socket.write(`echo ${ip}\n`);
    socket.on('data', (chunk) => socket.write(chunk));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(port, ip, resolve));
  return server;
}

/** service is a Service with one port named `main`. */
export const service = (name: string, port: number, protocol = 'TCP', namespace = 'default') => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace },
  spec: { ports: [{ name: 'main', port, protocol }] },
});

/** slice is the EndpointSlice of `service`'s port `main`: one ready endpoint. */
export const slice = (name: string, address: string, port: number, protocol = 'TCP', namespace = 'default') => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name: `${name}-1`, namespace, labels: { 'kubernetes.io/service-name': name } },
  addressType: 'IPv4',
  ports: [{ name: 'main', port, protocol }],
  endpoints: [{ addresses: [address], conditions: { ready: true } }],
});

/** gwRoute is a Gateway API object of `kind` (a route, mostly). */
export const gwRoute = (kind: string, name: string, spec: object, namespace = 'default') => ({
  apiVersion: `${GROUP}/v1`,
  kind,
  metadata: { name, namespace },
  spec,
});

export type Cond = { type: string; status: string; reason: string };
/** Status is the status of a route (parents), a Gateway or a ListenerSet (conditions, listeners), as read. */
export type Status = {
  conditions?: Cond[];
  parents?: { parentRef: { sectionName?: string; kind?: string }; conditions: Cond[] }[];
  listeners?: { name: string; attachedRoutes: number; supportedKinds: { kind: string }[]; conditions: Cond[] }[];
  /** a Gateway's count of accepted ListenerSets */
  attachedListenerSets?: number;
};

/** statusOf reads an object's status (`plural` of the Gateway API group). */
export const statusOf = async (custom: CustomObjectsApi, plural: string, name: string, namespace = 'default') =>
  (
    (await custom.getNamespacedCustomObject({ group: GROUP, version: 'v1', namespace, plural, name })) as {
      status?: Status;
    }
  ).status;

/** conditions are a route's first parent's conditions as `type → status/reason`. */
export const conditions = (status: Status | undefined) =>
  Object.fromEntries((status?.parents?.[0]?.conditions ?? []).map((c) => [c.type, `${c.status}/${c.reason}`]));

/** listenerSummary is each listener's supported kinds, attached routes and Accepted and Programmed status. */
export const listenerSummary = (status: Status | undefined) =>
  Object.fromEntries(
    (status?.listeners ?? []).map((l) => [
      l.name,
      {
        kinds: l.supportedKinds.map((k) => k.kind),
        attached: l.attachedRoutes,
        accepted: l.conditions.find((c) => c.type === 'Accepted')?.status,
        programmed: l.conditions.find((c) => c.type === 'Programmed')?.status,
      },
    ]),
  );
