/**
 * X-Accel-Redirect through the real controller and nginx: a backend's answer naming another location of its server
 * is not followed. On a host two namespaces share, tenant-z's backend answers X-Accel-Redirect to tenant-a's path
 * (behind tenant-a's auth-url) and to the internal location that asks tenant-a's auth service; the client gets
 * tenant-z's own answer, and neither tenant-a's backend nor its auth service hears of the request.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, waitFor, type Cluster } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { get } from '../support/net.js';

const HOST = 'shared.example.com';

/** A backend answering with what `answer` says, counting the requests it got. */
async function startServer(answer: (req: IncomingMessage, res: ServerResponse) => void) {
  let hits = 0;
  const server: Server = createServer((req, res) => {
    hits++;
    answer(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    get hits() {
      return hits;
    },
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

type Started = Awaited<ReturnType<typeof startServer>>;
let cluster: Cluster;
let redirector: Started;
let secret: Started;
let auth: Started;

beforeAll(async () => {
  // tenant-z's backend: sends nginx wherever the request's x-target says.
  redirector = await startServer((req, res) => {
    const target = req.headers['x-target'];
    if (typeof target === 'string') res.setHeader('X-Accel-Redirect', target);
    res.end('redirector');
  });
  secret = await startServer((_req, res) => res.end('tenant-a secret'));
  auth = await startServer((_req, res) => res.end('tenant-a auth service'));
  cluster = await startCluster([
    ingressClass(),
    ...serviceWithEndpoints('secret', [{ port: secret.port }], 'tenant-a'),
    ...serviceWithEndpoints('redirector', [{ port: redirector.port }], 'tenant-z'),
    ingress(
      'private',
      { [HOST]: [{ path: '/private', service: 'secret', port: 80 }] },
      {
        namespace: 'tenant-a',
        annotations: { 'nginx.ingress.kubernetes.io/auth-url': `http://127.0.0.1:${auth.port}/check` },
      },
    ),
    ingress('app', { [HOST]: [{ path: '/app', service: 'redirector', port: 80 }] }, { namespace: 'tenant-z' }),
  ]);
  await waitFor('both Ingresses to be served', async () => {
    const reply = await get({ host: HOST, path: '/app', port: cluster.httpPort }).catch(() => null);
    return reply?.body === 'redirector';
  });
}, 30_000);

afterAll(async () => {
  await cluster?.close();
  for (const server of [redirector, secret, auth]) await server?.close();
});

/** ask sends tenant-z's backend a request whose answer names `target` in X-Accel-Redirect. */
const ask = (target: string) =>
  get({ host: HOST, path: '/app/download', port: cluster.httpPort, headers: { 'x-target': target } });

describe('X-Accel-Redirect from a backend', () => {
  it("is not followed to another tenant's path on the shared host", async () => {
    const [secretHits, authHits] = [secret.hits, auth.hits];
    const reply = await ask('/private/report');
    expect(reply.status).toBe(200);
    expect(reply.body).toBe('redirector');
    expect(reply.headers['x-accel-redirect']).toBeUndefined();
    expect([secret.hits, auth.hits]).toEqual([secretHits, authHits]);
    // The path itself is served to clients, through its auth service.
    expect((await get({ host: HOST, path: '/private/report', port: cluster.httpPort })).body).toBe('tenant-a secret');
  });

  it("is not followed to the internal location that asks another tenant's auth service", async () => {
    const conf = await readFile(join(cluster.dir, 'nginx', 'nginx.conf'), 'utf8');
    const internal = /location = "?(\/_external-auth-[^"\s]+)"? \{/.exec(conf)?.[1];
    expect(internal).toBeDefined();
    const authHits = auth.hits;
    const reply = await ask(internal!);
    expect(reply.body).toBe('redirector');
    expect(auth.hits).toBe(authHits);
  });
});
