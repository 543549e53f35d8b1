/**
 * The ConfigMap keys that show on the wire, through real nginx in both ways backends reach it (endpoints
 * rendered into nginx.conf, and the Lua balancer): server-tokens (the Server header), add-headers (a
 * response header on every answer), proxy-set-headers (the backend receives it), gzip-disable (no gzip
 * for a matching User-Agent), enable-brotli (Content-Encoding: br), keep-alive-requests (the client
 * connection closes after that many requests), upstream-keepalive-connections (the backend sees its
 * connection reused; with 0, a connection per request) and server-snippet.
 */
import { Agent, request } from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { startBackend, type Backend } from '../support/net.js';
import { SCENE_MODES, startScene, type Scene } from './annotations-harness.js';
import { nginxProcesses } from '../support/rollout.js';

/**
 * The header ConfigMaps, each in a namespace other than the controller's ingress/config: ingress-nginx reads them from
 * any namespace (its e2e "Add a custom header" puts them in the test's), so the watcher follows what add-headers and
 * proxy-set-headers name.
 */
const HEADER_CONFIG_MAPS = [
  {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { namespace: 'default', name: 'custom-headers' },
    data: { 'X-Using-Nginx-Controller': 'true', 'X-Served-For': '$host' },
  },
  {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { namespace: 'tenant', name: 'proxy-headers' },
    data: { 'X-Different-Name': 'true', 'X-Client': '$remote_addr', 'X-Request-Start': 't=${msec}' },
  },
];

interface Raw {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Buffer;
}

/** fetch GETs `path` of `host` on `port` with `headers`, through `agent` (a fresh connection without one). */
function fetch(port: number, host: string, path: string, headers: Record<string, string> = {}, agent?: Agent) {
  return new Promise<Raw>((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, headers: { host, ...headers }, agent: agent ?? false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error(`request to ${host}${path} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

const json = (body: Buffer) =>
  JSON.parse(body.toString('utf8')) as { backend: string; headers: Record<string, string> };
// The backend echoes the request's headers: a long header makes an answer worth compressing.
const long = { 'x-padding': 'p'.repeat(1500) };

/** sequential sends `count` requests one after another, each on a connection of its own. */
async function sequential(scene: Scene, host: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) expect((await fetch(scene.httpPort, host, `/${i}`)).status).toBe(200);
}

describe.each(SCENE_MODES)('ConfigMap keys on the wire (%s)', (mode) => {
  let backend: Backend;
  let scene: Scene;

  beforeAll(async () => {
    backend = await startBackend('app');
    scene = await startScene(
      [
        ingressClass(),
        ...serviceWithEndpoints('app', [{ port: backend.port }]),
        ingress('web', { 'keys.test': [{ path: '/', service: 'app' }] }),
        ...HEADER_CONFIG_MAPS,
      ],
      {
        mode,
        configMap: {
          // one worker: one pool of backend connections, so reuse is countable
          'worker-processes': '1',
          'server-tokens': 'true',
          'add-headers': 'default/custom-headers',
          'proxy-set-headers': 'tenant/proxy-headers',
          'keep-alive-requests': '2',
          'upstream-keepalive-connections': '8',
          'use-gzip': 'true',
          'gzip-types': 'application/json',
          'gzip-min-length': '100',
          'gzip-disable': 'curl|wget',
          'enable-brotli': 'true',
          'brotli-types': 'application/json',
          'brotli-min-length': '100',
          'server-snippet': 'add_header X-Server-Snippet yes;',
        },
      },
    );
  }, 60_000);

  afterAll(async () => {
    await scene?.stop();
    await backend?.close();
  });

  it('serves without problems', () => expect(scene.problems).toBe(''));

  it('server-tokens: the Server header names the nginx version', async () => {
    const answer = await fetch(scene.httpPort, 'keys.test', '/');
    expect(answer.headers.server).toMatch(/^nginx\/\d+\.\d+\.\d+$/);
  });

  it("add-headers: every answer carries the ConfigMap's headers, the backend's and nginx's own 404", async () => {
    const proxied = await fetch(scene.httpPort, 'keys.test', '/');
    expect([proxied.status, proxied.headers['x-using-nginx-controller'], proxied.headers['x-served-for']]).toEqual([
      200,
      'true',
      'keys.test',
    ]);
    const unknown = await fetch(scene.httpPort, 'nobody.test', '/');
    expect([unknown.status, unknown.headers['x-using-nginx-controller']]).toEqual([404, 'true']);
  });

  it.runIf(mode === 'lua')(
    'add-headers: a change of the header ConfigMap reaches the answers (it is watched)',
    async () => {
      const processes = nginxProcesses(scene.cluster!).length;
      await scene.cluster!.patch({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { namespace: 'default', name: 'custom-headers' },
        data: { 'X-Using-Nginx-Controller': 'changed' },
      });
      await waitFor(
        'the changed header served',
        async () => (await fetch(scene.httpPort, 'keys.test', '/')).headers['x-using-nginx-controller'] === 'changed',
        10_000,
      );
      // The reload's old workers may still accept a connection, and close it after one answer: the tests after
      // this one (keep-alive-requests) must meet the new workers only.
      await waitFor('the old workers gone', async () => nginxProcesses(scene.cluster!).length <= processes, 10_000);
    },
  );

  it('server-snippet: its header is on the answers of every server', async () => {
    expect((await fetch(scene.httpPort, 'keys.test', '/')).headers['x-server-snippet']).toBe('yes');
  });

  it("proxy-set-headers: the backend receives the ConfigMap's headers, variables filled in", async () => {
    const { headers } = json((await fetch(scene.httpPort, 'keys.test', '/')).body);
    expect([headers['x-different-name'], headers['x-client']]).toEqual(['true', '127.0.0.1']);
    expect(headers['x-request-start']).toMatch(/^t=\d+\.\d{3}$/);
  });

  it('gzip-disable: a matching User-Agent gets no gzip, another one does', async () => {
    const asked = { 'accept-encoding': 'gzip', ...long };
    const curl = await fetch(scene.httpPort, 'keys.test', '/', { ...asked, 'user-agent': 'curl/8.5.0' });
    expect(curl.headers['content-encoding']).toBeUndefined();
    expect(json(curl.body).backend).toBe('app');
    const browser = await fetch(scene.httpPort, 'keys.test', '/', { ...asked, 'user-agent': 'Mozilla/5.0' });
    expect(browser.headers['content-encoding']).toBe('gzip');
    expect(json(gunzipSync(browser.body)).backend).toBe('app');
  });

  it('enable-brotli: a client that accepts br gets brotli, which decodes to what the backend sent', async () => {
    const answer = await fetch(scene.httpPort, 'keys.test', '/br', { 'accept-encoding': 'br', ...long });
    expect(answer.headers['content-encoding']).toBe('br');
    expect(json(brotliDecompressSync(answer.body)).backend).toBe('app');
  });

  it('keep-alive-requests: the client connection closes after 2 requests', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = await fetch(scene.httpPort, 'keys.test', '/1', {}, agent);
      const second = await fetch(scene.httpPort, 'keys.test', '/2', {}, agent);
      expect([first.headers.connection, second.headers.connection]).toEqual(['keep-alive', 'close']);
    } finally {
      agent.destroy();
    }
  });

  it('upstream-keepalive-connections: six requests reach the backend over one reused connection', async () => {
    await sequential(scene, 'keys.test', 1);
    const before = backend.connections;
    await sequential(scene, 'keys.test', 6);
    expect(backend.connections - before).toBe(0);
  });

  // Last: it changes add-headers for good. The watcher opens a watch for a header ConfigMap named later, elsewhere.
  it.runIf(mode === 'lua')(
    'add-headers: naming a ConfigMap in yet another namespace at run time serves it, and follows its changes',
    async () => {
      const late = (value: string) => ({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { namespace: 'elsewhere', name: 'late-headers' },
        data: { 'X-Late': value },
      });
      await scene.cluster!.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'elsewhere' } });
      await scene.cluster!.apply(late('yes'));
      await scene.cluster!.patch({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { namespace: 'ingress', name: 'config' },
        data: { 'add-headers': 'elsewhere/late-headers' },
      });
      const header = async () => (await fetch(scene.httpPort, 'keys.test', '/')).headers['x-late'];
      await waitFor('the late header served', async () => (await header()) === 'yes', 10_000);
      await scene.cluster!.patch(late('changed'));
      await waitFor('its change served', async () => (await header()) === 'changed', 10_000);
    },
  );
});

describe.each(SCENE_MODES)('ConfigMap keys off (%s)', (mode) => {
  let backend: Backend;
  let scene: Scene;

  beforeAll(async () => {
    backend = await startBackend('app');
    scene = await startScene(
      [
        ingressClass(),
        ...serviceWithEndpoints('app', [{ port: backend.port }]),
        ingress('web', { 'off.test': [{ path: '/', service: 'app' }] }),
      ],
      { mode, configMap: { 'worker-processes': '1', 'upstream-keepalive-connections': '0' } },
    );
  }, 60_000);

  afterAll(async () => {
    await scene?.stop();
    await backend?.close();
  });

  it('server-tokens off (the default): no Server header, as ingress-nginx (headers-more clears it)', async () => {
    expect((await fetch(scene.httpPort, 'off.test', '/')).headers.server).toBeUndefined();
  });

  it('upstream-keepalive-connections 0: every request opens a backend connection of its own', async () => {
    const before = backend.connections;
    await sequential(scene, 'off.test', 4);
    expect(backend.connections - before).toBe(4);
  });

  it('no brotli unless enabled', async () => {
    const answer = await fetch(scene.httpPort, 'off.test', '/', { 'accept-encoding': 'br', ...long });
    expect(answer.headers['content-encoding']).toBeUndefined();
  });
});
