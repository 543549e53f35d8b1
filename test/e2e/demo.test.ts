/**
 * The README's first command: the demo starts the API server, backends, the controller and
 * nginx; kubectl works against it with the kubeconfig it writes; Ctrl-C stops it with exit 0.
 */
import { execa } from 'execa';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { freePort, get } from '../support/net.js';
import { waitFor } from '../support/cluster.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const CLI = join(ROOT, 'bin/ingress-actors');

it('serves the examples, follows kubectl apply, refuses a bad Ingress, and stops cleanly on Ctrl-C', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ia-demo-'));
  const [httpPort, httpsPort, webhookPort] = [await freePort(), await freePort(), await freePort()];
  const demo = execa(
    CLI,
    [
      'demo',
      '--dir',
      dir,
      '--http-port',
      String(httpPort),
      '--https-port',
      String(httpsPort),
      '--webhook-port',
      String(webhookPort),
      '--log-level',
      'warn',
    ],
    { reject: false, cwd: ROOT },
  );
  let printed = '';
  await new Promise<void>((resolve, reject) => {
    demo.stdout?.on('data', (chunk: Buffer) => {
      printed += chunk.toString();
      if (printed.includes('Ctrl-C stops it.')) resolve();
    });
    void demo.then((r) => reject(new Error(`demo exited early: ${r.stderr}`)));
  });
  expect(printed).toContain(`curl -H 'Host: hello.demo.local' http://127.0.0.1:${httpPort}/`);
  await waitFor(
    'hello served',
    async () =>
      (await get({ host: 'hello.demo.local', path: '/', port: httpPort })).body.includes(
        'default/hello (backend on 127.0.0.1:8081)',
      ),
    5000,
  );
  const secure = await get({ host: 'secure.demo.local', path: '/', port: httpsPort, https: true });
  expect(secure.body).toContain('default/secure');
  expect(secure.peerCertificate?.subject.CN).toBe('secure.demo.local');

  const kubectl = (...args: string[]) =>
    execa('kubectl', ['--kubeconfig', join(dir, 'kubeconfig'), ...args], { cwd: ROOT });
  expect((await kubectl('get', 'ingress', '-A')).stdout).toMatch(/hello\s+nginx\s+hello\.demo\.local/);
  // The Gateway API: the vendored CRDs and examples/gateway-api/ are in the cluster, defaulted by the CRD schemas.
  expect((await kubectl('get', 'gateways', '-A')).stdout).toMatch(/default\s+demo\s+ingress-actors\s/);
  const httpRoute = JSON.parse((await kubectl('get', 'httproute', 'hello', '-o', 'json')).stdout);
  expect(httpRoute.spec.rules[0].backendRefs[0]).toMatchObject({ kind: 'Service', name: 'hello', weight: 1 });
  expect(printed).toContain('get gatewayclasses,gateways,httproutes -A');
  // The demo's controller is the Gateway's: its leader writes the status (kubectl wait reads it as an operator would).
  await kubectl('wait', '--for=condition=Programmed', '--timeout=10s', 'gateway/demo');
  await kubectl('wait', '--for=condition=Accepted', '--timeout=10s', 'gatewayclass/ingress-actors');
  // and the HTTPRoute answers, with the command the demo prints
  expect(printed).toContain(`curl -H 'Host: gateway.demo.local' http://127.0.0.1:${httpPort}/`);
  await waitFor(
    'the HTTPRoute served',
    async () =>
      (await get({ host: 'gateway.demo.local', path: '/', port: httpPort })).body.includes(
        'default/hello (backend on 127.0.0.1:8081) answered GET / for Host gateway.demo.local',
      ),
    5000,
  );
  await kubectl('apply', '--validate=false', '-f', 'demo/moved-api.yaml');
  await waitFor(
    'the moved path served',
    async () => (await get({ host: 'api.demo.local', path: '/v3/x', port: httpPort })).body.includes('default/api-v2'),
    5000,
  );

  // The admission webhook: both Ingresses of demo/bad-ingress.yaml are refused with the webhook's reasons.
  expect(printed).toContain('apply -f demo/bad-ingress.yaml');
  const refused = await execa(
    'kubectl',
    ['--kubeconfig', join(dir, 'kubeconfig'), 'apply', '-f', 'demo/bad-ingress.yaml'],
    {
      cwd: ROOT,
      reject: false,
    },
  );
  expect(refused.exitCode).not.toBe(0);
  expect(refused.stderr).toContain(
    'admission webhook "validate.nginx.ingress.kubernetes.io" denied the request: default/hello-again: ' +
      'spec.rules[0].http.paths[0].path: host "hello.demo.local" and path "/" is already defined in ingress default/hello',
  );
  expect(refused.stderr).toContain(
    'denied the request: default/slow: metadata.annotations.nginx.ingress.kubernetes.io/proxy-read-timeout: ',
  );
  expect((await kubectl('get', 'ingress', '-A')).stdout).not.toMatch(/hello-again|slow/);
  // The webhook's certificate is the controller's own, as deploy/ runs it: the Secret it made, its CA in the
  // caBundle, and no key file anywhere in the demo's folder.
  const secret = JSON.parse(
    (await kubectl('get', 'secret', '-n', 'ingress-actors', 'ingress-actors-admission', '-o', 'json')).stdout,
  ) as { type: string; data: Record<string, string> };
  expect(secret.type).toBe('kubernetes.io/tls');
  const caBundle = (
    await kubectl(
      'get',
      'validatingwebhookconfiguration',
      'ingress-actors-admission',
      '-o',
      'jsonpath={.webhooks[0].clientConfig.caBundle}',
    )
  ).stdout;
  expect(caBundle).toBe(secret.data['ca.crt']);
  await expect(stat(join(dir, 'webhook'))).rejects.toThrow(/ENOENT/);

  demo.kill('SIGINT');
  const result = await demo;
  expect(result.exitCode).toBe(0);
  await rm(dir, { recursive: true, force: true });
}, 60_000);

/** listeners reads the kernel's table of listening TCP sockets: each local address, by port. */
async function listeners(): Promise<Map<number, string[]>> {
  const byPort = new Map<number, string[]>();
  for (const [file, v6] of [
    ['/proc/net/tcp', false],
    ['/proc/net/tcp6', true],
  ] as const) {
    for (const line of (await readFile(file, 'utf8')).split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (state !== '0A' || !local) continue; // 0A: LISTEN
      const [hex, portHex] = local.split(':') as [string, string];
      const address = v6
        ? /^0{32}$/.test(hex)
          ? '::'
          : hex === '00000000000000000000000001000000'
            ? '::1'
            : `v6:${hex}`
        : hex
            .match(/../g)!
            .reverse()
            .map((b) => parseInt(b, 16))
            .join('.');
      const port = parseInt(portHex, 16);
      byPort.set(port, [...(byPort.get(port) ?? []), address]);
    }
  }
  return byPort;
}

/** startDemo runs the demo and resolves with what it printed once it is up. */
async function startDemo(args: string[]) {
  const demo = execa(CLI, ['demo', ...args], {
    reject: false,
    cwd: ROOT,
    env: { PATH: `${process.env.PATH}:/usr/sbin` },
  });
  let printed = '';
  let logged = '';
  demo.stderr?.on('data', (chunk: Buffer) => void (logged += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    demo.stdout?.on('data', (chunk: Buffer) => {
      printed += chunk.toString();
      if (printed.includes('Ctrl-C stops it.')) resolve();
    });
    void demo.then((r) => reject(new Error(`demo exited early: ${r.stderr}`)));
  });
  return { demo, printed, logged: () => logged };
}

it('finding "demo": passes controller flags on (--inspect, --healthz-port, --log-level), listens on 127.0.0.1 only, ' +
  'shows an ADDRESS, stops on SIGTERM', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ia-demo-'));
  const [httpPort, httpsPort, healthzPort] = [await freePort(), await freePort(), await freePort()];
  const { demo, printed, logged } = await startDemo([
    '--dir',
    dir,
    '--http-port',
    String(httpPort),
    '--https-port',
    String(httpsPort),
    '--healthz-port',
    String(healthzPort),
    '--inspect',
    '--log-level',
    'info',
  ]);
  try {
    // The inspector is on, on its own port (8090), not the demo's HTTP port (8080 by default).
    expect(printed).toContain('The Stately inspector: open http://127.0.0.1:8090/');
    expect((await get({ host: '127.0.0.1:8090', path: '/', port: 8090 })).body).toContain('stately.ai/inspect');
    expect((await get({ host: 'x', path: '/healthz', port: healthzPort })).status).toBe(200);
    // The status page, on the healthz port, for the loopback client the demo's user is.
    expect(printed).toContain(`The status page: open http://127.0.0.1:${healthzPort}/`);
    const page = await get({ host: `127.0.0.1:${healthzPort}`, path: '/', port: healthzPort });
    expect([page.status, page.headers['content-type']]).toEqual([200, 'text/html; charset=utf-8']);
    expect(page.body).toContain('<script src="/status.js" defer></script>');
    expect(logged()).toContain(`"port":${healthzPort},"msg":"serving /healthz and /metrics"`);

    const apiPort = Number(/API server https:\/\/127\.0\.0\.1:(\d+)/.exec(printed)![1]);
    const table = await listeners();
    const ours = [httpPort, httpsPort, healthzPort, 8090, apiPort, 8081, 8082, 8083, 8084, 8444];
    expect(Object.fromEntries(ours.map((port) => [port, [...new Set(table.get(port))]]))).toEqual(
      Object.fromEntries(ours.map((port) => [port, ['127.0.0.1']])),
    );

    const kubectl = (...a: string[]) =>
      execa('kubectl', ['--kubeconfig', join(dir, 'kubeconfig'), ...a], { cwd: ROOT });
    await waitFor(
      'the ADDRESS column filled',
      async () =>
        /hello\s+nginx\s+hello\.demo\.local\s+127\.0\.0\.1\s/.test((await kubectl('get', 'ingress', '-A')).stdout),
      15_000,
      200,
    );
  } finally {
    demo.kill('SIGTERM');
  }
  const result = await demo;
  expect(result.exitCode).toBe(0);
  const after = await listeners();
  expect([httpPort, httpsPort, healthzPort, 8090].filter((port) => after.has(port))).toEqual([]);
  await rm(dir, { recursive: true, force: true });
}, 60_000);

it('a backend port taken (8082) moves that backend to a free port, printed, and the demo serves through it', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ia-demo-'));
  const taken = createServer();
  // Taken by this test, or already by someone else (a second demo): either way the demo must not use it.
  await new Promise<void>((resolve) => {
    taken.once('error', () => resolve());
    taken.listen(8082, '127.0.0.1', resolve);
  });
  const httpPort = await freePort();
  const { demo, printed } = await startDemo([
    '--dir',
    dir,
    '--http-port',
    String(httpPort),
    '--https-port',
    String(await freePort()),
    '--webhook-port',
    String(await freePort()),
    '--healthz-port',
    String(await freePort()),
    '--log-level',
    'silent',
  ]);
  try {
    const moved = /default\/api on 127\.0\.0\.1:(\d+) \(8082 is taken\)/.exec(printed);
    expect(moved, printed).not.toBeNull();
    const port = Number(moved![1]);
    expect(port).not.toBe(8082);
    await waitFor(
      'api served by the moved backend',
      async () =>
        (await get({ host: 'api.demo.local', path: '/v1/x', port: httpPort })).body.includes(
          `default/api (backend on 127.0.0.1:${port}) answered GET /v1/x`,
        ),
      5000,
    );
    const kubectl = (...a: string[]) =>
      execa('kubectl', ['--kubeconfig', join(dir, 'kubeconfig'), ...a], { cwd: ROOT });
    const slice = JSON.parse(
      (await kubectl('get', 'endpointslice', '-l', 'kubernetes.io/service-name=api', '-o', 'json')).stdout,
    );
    expect(slice.items[0].ports[0].port).toBe(port);
  } finally {
    demo.kill('SIGTERM');
    await new Promise((resolve) => taken.close(resolve));
  }
  expect((await demo).exitCode).toBe(0);
  await rm(dir, { recursive: true, force: true });
}, 60_000);

it('its default ports taken (8080, 8443, 8444, 10254), the demo moves each to a free one, prints where, and serves there', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ia-demo-'));
  const defaults = [8080, 8443, 8444, 10254];
  const held = defaults.map(() => createServer());
  // Taken by this test, or already by someone else: either way the demo must not use them.
  await Promise.all(
    held.map(
      (server, i) =>
        new Promise<void>((resolve) => {
          server.once('error', () => resolve());
          server.listen(defaults[i], '127.0.0.1', resolve);
        }),
    ),
  );
  const { demo, printed } = await startDemo(['--dir', dir, '--log-level', 'silent']);
  try {
    const at = /nginx on 127\.0\.0\.1:(\d+) \(http\) and :(\d+) \(https\)/.exec(printed);
    expect(at, printed).not.toBeNull();
    const [httpPort, httpsPort] = [Number(at![1]), Number(at![2])];
    for (const port of defaults) expect(printed).toContain(`(${port} is taken)`);
    const statusPage = /The status page: open http:\/\/127\.0\.0\.1:(\d+)\//.exec(printed);
    expect(defaults).not.toContain(httpPort);
    expect(defaults).not.toContain(httpsPort);
    expect(defaults).not.toContain(Number(statusPage?.[1]));
    expect(printed).toContain(`curl -H 'Host: hello.demo.local' http://127.0.0.1:${httpPort}/`);
    expect((await get({ host: 'hello.demo.local', path: '/', port: httpPort })).status).toBe(200);
    expect((await get({ host: 'secure.demo.local', path: '/', port: httpsPort, https: true })).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${statusPage![1]}/healthz`)).status).toBe(200);
  } finally {
    demo.kill('SIGTERM');
    await Promise.all(held.map((server) => new Promise((resolve) => server.close(resolve))));
  }
  expect((await demo).exitCode).toBe(0);
  await rm(dir, { recursive: true, force: true });
}, 60_000);

it('finding "demo": a --healthz-port in use is one line, exit 1, and the demo ends', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ia-demo-'));
  const port = await freePort();
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(port, '127.0.0.1', resolve));
  try {
    const run = await execa(
      CLI,
      [
        'demo',
        '--dir',
        dir,
        '--http-port',
        String(await freePort()),
        '--https-port',
        String(await freePort()),
        '--healthz-port',
        String(port),
        '--log-level',
        'silent',
      ],
      {
        reject: false,
        cwd: ROOT,
        timeout: 20_000,
        env: { PATH: `${process.env.PATH}:/usr/sbin` },
      },
    );
    expect({ timedOut: run.timedOut, code: run.exitCode, stderr: run.stderr }).toEqual({
      timedOut: false,
      code: 1,
      stderr: `ingress-actors demo: --healthz-port ${port}: 127.0.0.1:${port}: the port is already in use`,
    });
  } finally {
    await new Promise((resolve) => taken.close(resolve));
    await rm(dir, { recursive: true, force: true });
  }
}, 30_000);

it('finding "demo": SIGTERM during the start stops it cleanly (exit 0, no nginx left)', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ia-demo-'));
  const httpPort = await freePort();
  const demo = execa(
    CLI,
    [
      'demo',
      '--dir',
      dir,
      '--http-port',
      String(httpPort),
      '--https-port',
      String(await freePort()),
      '--healthz-port',
      String(await freePort()),
      '--log-level',
      'silent',
    ],
    {
      reject: false,
      cwd: ROOT,
      env: { PATH: `${process.env.PATH}:/usr/sbin` },
    },
  );
  // The kubeconfig is written once the API server listens: the backends and the controller are still to come.
  await waitFor(
    'the kubeconfig written',
    () =>
      stat(join(dir, 'kubeconfig')).then(
        () => true,
        () => false,
      ),
    15_000,
    10,
  );
  demo.kill('SIGTERM');
  const result = await demo;
  expect({ code: result.exitCode, signal: result.signal ?? null }).toEqual({ code: 0, signal: null });
  expect((await listeners()).has(httpPort)).toBe(false);
  await rm(dir, { recursive: true, force: true });
}, 30_000);
