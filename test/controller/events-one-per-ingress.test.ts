/**
 * Issue 15: a controller, a real nginx and the test API server; an Ingress with three problems
 * (a misspelt annotation, a regex path without use-regex, a missing Service) gets one Warning
 * Event that names all three, with how to fix the first two; its good route is still served.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { findResourceByKind } from '../../src/dev/api-server/resources.js';
import { startCluster, waitFor, type Cluster } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { get, startBackend, type Backend } from '../support/net.js';

const EVENTS = findResourceByKind('v1', 'Event')!;
const HOST = 'three.example.com';
let cluster: Cluster;
let backend: Backend;

beforeAll(async () => {
  backend = await startBackend('web');
  const broken = ingress(
    'broken',
    {
      [HOST]: [
        { path: '/', service: 'web' },
        { path: '/items/[0-9]+', service: 'web' },
        { path: '/gone', service: 'missing' },
      ],
    },
    { annotations: { 'nginx.ingress.kubernetes.io/rewrite-targt': '/' } },
  );
  cluster = await startCluster([ingressClass(), ...serviceWithEndpoints('web', [{ port: backend.port }]), broken]);
}, 30_000);
afterAll(async () => {
  await cluster?.close();
  await backend?.close();
});

const brokenEvents = () =>
  (
    cluster.api.registry.list(EVENTS, { namespace: 'default' }).items as {
      message?: string;
      reason?: string;
      involvedObject?: { name?: string };
    }[]
  ).filter((e) => e.involvedObject?.name === 'broken');

it('an Ingress with three problems gets one Event naming all three, each with its fix', async () => {
  await waitFor(
    'the good route served',
    async () => (await get({ host: HOST, path: '/', port: cluster.httpPort })).backend === 'web',
    15_000,
  );
  await waitFor('an Event on the broken Ingress', () => brokenEvents().length > 0, 10_000, 100);
  await new Promise((r) => setTimeout(r, 500)); // no second Event follows
  const events = brokenEvents();
  expect(events).toHaveLength(1);
  const { message, reason } = events[0]!;
  expect(reason).toBe('InvalidIngress');
  expect(message).toMatch(/^3 problems: \(1\) /);
  expect(message).toContain(
    'metadata.annotations.nginx.ingress.kubernetes.io/rewrite-targt: is not an annotation this controller knows (did ' +
      'you mean nginx.ingress.kubernetes.io/rewrite-target?)',
  );
  expect(message).toContain('spec.rules[0].http.paths[1].path: "/items/[0-9]+" has characters outside');
  expect(message).toContain('set nginx.ingress.kubernetes.io/use-regex: "true" and pathType: ImplementationSpecific');
  expect(message).toContain('spec.rules[0].http.paths[2].backend');
});
