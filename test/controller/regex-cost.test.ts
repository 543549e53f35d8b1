/**
 * Issue 27, "a tenant's regex cannot stall others", through the controller and real nginx: a pattern the subset
 * used to accept and nginx ran with exponential backtracking (`(a|aa)+`: 6.0 s of a worker per request as 128
 * HTTPRoute header matches, 2.9 s as Ingress use-regex paths) is now refused where it is read: it never reaches
 * nginx.conf or the router's table, the object gets a Warning Event (and the HTTPRoute `Accepted=False`) naming
 * the field, and the other tenant on the same host keeps being served.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, waitFor, type Cluster } from '../support/cluster.js';
import { GATEWAY_RESOURCES } from '../support/gateway-kinds.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { get, startBackend, type Backend } from '../support/net.js';

const GROUP = 'gateway.networking.k8s.io';
const HOST = 'shared.example';
const CATASTROPHIC = '(a|aa)+';

let cluster: Cluster;
let good: Backend;
let bad: Backend;

beforeAll(async () => {
  good = await startBackend('good');
  bad = await startBackend('bad');
  cluster = await startCluster(
    [
      ingressClass(),
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'good' } },
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bad' } },
      ...serviceWithEndpoints('web', [{ port: good.port }], 'good'),
      ...serviceWithEndpoints('web', [{ port: bad.port }], 'bad'),
      ingress('site', { [HOST]: [{ path: '/good', service: 'web' }] }, { namespace: 'good' }),
    ],
    [],
    process.env.TEST_LOG ?? 'silent',
    { extraKinds: GATEWAY_RESOURCES },
  );
  await waitFor(
    'the good tenant served',
    async () => (await get({ host: HOST, path: '/good', port: cluster.httpPort })).backend === 'good',
    20_000,
    50,
  );
}, 40_000);

afterAll(async () => {
  await cluster?.close();
  await good?.close();
  await bad?.close();
});

/** readRoute reads the hostile HTTPRoute. */
const readRoute = async () =>
  (await cluster.client.read({
    apiVersion: `${GROUP}/v1`,
    kind: 'HTTPRoute',
    metadata: { name: 'hostile', namespace: 'bad' },
  })) as {
    status?: { parents?: { conditions?: { type: string; status: string; reason: string; message: string }[] }[] };
  };

/** eventsOn are the Warning Events' messages on one object of the bad namespace. */
async function eventsOn(kind: string, name: string): Promise<string[]> {
  const list = (await cluster.client.list('v1', 'Event', 'bad')) as {
    items: { message?: string; involvedObject?: { kind?: string; name?: string } }[];
  };
  return list.items
    .filter((e) => e.involvedObject?.kind === kind && e.involvedObject?.name === name)
    .map((e) => e.message ?? '');
}

describe('issue 27: a catastrophic regex is refused where it is read', () => {
  it(`an Ingress use-regex path /${CATASTROPHIC}$ is left out with its problem; the host serves the others`, async () => {
    await cluster.apply(
      ingress(
        'hostile',
        {
          [HOST]: [
            { path: `/${CATASTROPHIC}$`, pathType: 'ImplementationSpecific', service: 'web' },
            { path: '/plain', service: 'web' },
          ],
        },
        { namespace: 'bad', annotations: { 'nginx.ingress.kubernetes.io/use-regex': 'true' } },
      ),
    );
    await waitFor(
      'the hostile Ingress Event',
      async () => (await eventsOn('Ingress', 'hostile')).some((m) => m.includes('two ways to match the same text')),
      15_000,
      100,
    );
    const events = (await eventsOn('Ingress', 'hostile')).join('\n');
    expect(events).toContain(`spec.rules[0].http.paths[0].path: "/${CATASTROPHIC}$": two ways to match the same text`);
    await waitFor(
      "the hostile Ingress's other path served",
      async () => (await get({ host: HOST, path: '/plain', port: cluster.httpPort })).backend === 'bad',
      15_000,
      50,
    );
    expect(await readFile(join(cluster.config.configDir, 'nginx.conf'), 'utf8')).not.toContain(CATASTROPHIC);
    // the request that cost 2.9 s of a worker before: not a regex location of the host any more
    const hostile = await get({ host: HOST, path: `/${'a'.repeat(40)}!`, port: cluster.httpPort });
    expect(hostile.backend).toBeUndefined();
    expect((await get({ host: HOST, path: '/good', port: cluster.httpPort })).backend).toBe('good');
  }, 40_000);

  it(`an HTTPRoute header match ${CATASTROPHIC} is refused: Accepted=False naming the field, nothing routed`, async () => {
    await cluster.apply({
      apiVersion: `${GROUP}/v1`,
      kind: 'GatewayClass',
      metadata: { name: 'ingress-actors' },
      spec: { controllerName: 'ingress-actors.io/gateway-controller' },
    });
    await cluster.apply({
      apiVersion: `${GROUP}/v1`,
      kind: 'Gateway',
      metadata: { name: 'gw', namespace: 'bad' },
      spec: {
        gatewayClassName: 'ingress-actors',
        listeners: [{ name: 'http', port: 80, protocol: 'HTTP', hostname: 'route.example' }],
      },
    });
    const headers = Array.from({ length: 16 }, (_, i) => ({
      type: 'RegularExpression',
      name: `x-q${i}`,
      value: CATASTROPHIC,
    }));
    await cluster.apply({
      apiVersion: `${GROUP}/v1`,
      kind: 'HTTPRoute',
      metadata: { name: 'hostile', namespace: 'bad' },
      spec: {
        parentRefs: [{ group: GROUP, kind: 'Gateway', name: 'gw', namespace: 'bad' }],
        rules: [{ matches: Array.from({ length: 8 }, () => ({ headers })), backendRefs: [{ name: 'web', port: 80 }] }],
      },
    });
    // Gateway API problems are told by the route's status (Events are the Ingress's)
    await waitFor(
      'the HTTPRoute status',
      async () => JSON.stringify(await readRoute()).includes('two ways to match the same text'),
      15_000,
      100,
    );
    expect((await readRoute()).status?.parents?.[0]?.conditions?.find((c) => c.type === 'Accepted')).toMatchObject({
      status: 'False',
      reason: 'UnsupportedValue',
      message: expect.stringContaining(`spec.rules[0].matches[0].headers[0].value: "${CATASTROPHIC}": two ways`),
    });
    const headersSent = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`x-q${i}`, `${'a'.repeat(40)}!`]));
    expect(
      (await get({ host: 'route.example', path: '/', port: cluster.httpPort, headers: headersSent })).backend,
    ).toBeUndefined();
    expect((await get({ host: HOST, path: '/good', port: cluster.httpPort })).backend).toBe('good');
  }, 40_000);
});
