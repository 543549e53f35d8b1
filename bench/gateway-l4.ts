/**
 * What a TCPRoute and a TLSRoute (Passthrough) cost against plain nginx stream proxying (issue 31): one stock nginx
 * backend answering 200 over HTTP and over HTTPS (its own certificate); one controller-rendered nginx (the model built
 * and rendered as the controller does) with a Gateway whose TCP listener's TCPRoute and whose TLS Passthrough
 * listener's TLSRoute name that backend; and one stock nginx whose stream block is a bare `proxy_pass` to the same two
 * ports (no SNI read). Per round and case, keep-alive requests/s (autocannon, 16 connections) and new connections/s
 * (each a connect, a request, a close; 16 at a time), rounds interleaved, the order turned every round; medians.
 * `npm run build && node_modules/.bin/node dist/bench/run.js gateway-l4` (`BENCH_ROUNDS`, `BENCH_REQUESTS`,
 * `BENCH_CONNECTIONS_PER_ROUND`).
 */
import { spawn } from 'node:child_process';
import { request as httpRequest, Agent as HttpAgent } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { buildModel } from '../src/model/build.js';
import { nginxBinary } from '../src/nginx/binary.js';
import { modulesPath } from '../src/nginx/modules.js';
import { DynamicSplit } from '../src/sync/dynamic-split.js';
import { loadTemplate } from '../src/render/load.js';
import { render } from '../src/render/render.js';
import { issueCertificate } from '../src/tls/issue.js';
import { gateway, gatewayClass, listener, namespace } from '../test/gateway/fixtures.js';
import { snapshotOf } from '../test/support/manifests.js';
import { freePort, waitForPort } from '../test/support/net.js';
import { dynamicOptions, startDynamic } from './gateway-routing.js';
import { median } from './stats.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const AMOUNT = Number(process.env.BENCH_REQUESTS ?? 10_000);
const NEW_CONNECTIONS = Number(process.env.BENCH_CONNECTIONS_PER_ROUND ?? 2_000);
const CONNECTIONS = 16;
const BACKEND = '127.0.0.2';
const SNI = 'pass.bench';

/** startPlainNginx runs a stock nginx on `conf` (its folder `dir`) until close. */
async function startPlainNginx(dir: string, conf: string, ports: { port: number; host: string }[]) {
  await mkdir(join(dir, 'tmp'), { recursive: true });
  await writeFile(join(dir, 'nginx.conf'), conf);
  await new Promise<void>((resolve, reject) =>
    spawn(nginxBinary(), ['-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: 'ignore' }).once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`nginx in ${dir} exited ${code}`)),
    ),
  );
  for (const p of ports) await waitForPort(p.port, 10_000, p.host);
  const pid = Number((await readFile(join(dir, 'nginx.pid'), 'utf8')).trim());
  return {
    close: async () => {
      process.kill(pid, 'SIGQUIT');
      await new Promise((resolve) => setTimeout(resolve, 300));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

const PREAMBLE = `worker_processes 1;
pid nginx.pid;
error_log error.log error;
events { worker_connections 4096; }
`;

/** the backend: HTTP and HTTPS on 127.0.0.2, answering 200 itself */
async function startBackend(http: number, https: number) {
  const dir = await mkdtemp(join(tmpdir(), 'ia-bench-l4-backend-'));
  const pair = await issueCertificate({ commonName: SNI, dnsNames: [SNI] });
  await writeFile(join(dir, 'cert.pem'), pair.certPem);
  await writeFile(join(dir, 'key.pem'), pair.keyPem);
  return startPlainNginx(
    dir,
    `${PREAMBLE}http {
    client_body_temp_path tmp; proxy_temp_path tmp; fastcgi_temp_path tmp; uwsgi_temp_path tmp; scgi_temp_path tmp;
    access_log off;
    server { listen ${BACKEND}:${http}; location / { return 200 "ok\\n"; } }
    server { listen ${BACKEND}:${https} ssl; ssl_certificate cert.pem; ssl_certificate_key key.pem;
             location / { return 200 "ok\\n"; } }
}
`,
    [
      { port: http, host: BACKEND },
      { port: https, host: BACKEND },
    ],
  );
}

/** the floor: a stock nginx whose stream block proxies two ports to the backend's, nothing else */
async function startPlainStream(tcp: number, tls: number, http: number, https: number) {
  const dir = await mkdtemp(join(tmpdir(), 'ia-bench-l4-plain-'));
  const modules = await modulesPath(nginxBinary());
  return startPlainNginx(
    dir,
    `load_module ${join(modules, 'ngx_stream_module.so')};
${PREAMBLE}stream {
    server { listen 127.0.0.1:${tcp}; proxy_pass ${BACKEND}:${http}; }
    server { listen 127.0.0.1:${tls}; proxy_pass ${BACKEND}:${https}; }
}
`,
    [
      { port: tcp, host: '127.0.0.1' },
      { port: tls, host: '127.0.0.1' },
    ],
  );
}

/** the controller's nginx: a Gateway's TCPRoute and TLSRoute (Passthrough) to the backend, built and rendered */
async function startRendered(tcp: number, tls: number, http: number, https: number) {
  const dir = await mkdtemp(join(tmpdir(), 'ia-bench-l4-rendered-'));
  const port = await freePort();
  const modules = await modulesPath(nginxBinary());
  const options = {
    ...(await dynamicOptions(dir, port)),
    stream: { modules: [join(modules, 'ngx_stream_module.so')], socketDir: dir },
  };
  const service = (name: string, p: number) => [
    { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'default' }, spec: { ports: [{ port: p }] } },
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: `${name}-1`, namespace: 'default', labels: { 'kubernetes.io/service-name': name } },
      addressType: 'IPv4',
      ports: [{ port: p, protocol: 'TCP' }],
      endpoints: [{ addresses: [BACKEND], conditions: { ready: true } }],
    },
  ];
  const streamRoute = (kind: string, name: string, spec: object) => ({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind,
    metadata: { name, namespace: 'default', generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' },
    spec: { parentRefs: [{ name: 'gw', sectionName: name }], ...spec },
  });
  const objects = [
    { kind: 'ConfigMap', metadata: { namespace: 'ingress', name: 'config' }, data: { 'worker-processes': '1' } },
    ...service('plain', http),
    ...service('secure', https),
    gatewayClass(),
    gateway([
      listener('tcp', { port: tcp, protocol: 'TCP' }),
      listener('tls', { port: tls, protocol: 'TLS', tls: { mode: 'Passthrough' } }),
    ]),
    streamRoute('TCPRoute', 'tcp', { rules: [{ backendRefs: [{ name: 'plain', port: http }] }] }),
    streamRoute('TLSRoute', 'tls', { hostnames: [SNI], rules: [{ backendRefs: [{ name: 'secure', port: https }] }] }),
    namespace('default'),
  ] as Record<string, unknown>[];
  const result = buildModel(snapshotOf(objects), options);
  const refused = result.problems.filter((p) => ['Gateway', 'TCPRoute', 'TLSRoute'].includes(p.kind));
  if (refused.length > 0) throw new Error(`bench objects refused: ${JSON.stringify(refused)}`);
  const { model, tables } = new DynamicSplit().split(result.model);
  const nginx = await startDynamic(dir, port, render(model, await loadTemplate()), model.certificates, tables);
  await waitForPort(tcp, 10_000, '127.0.0.1');
  return nginx;
}

interface Case {
  readonly name: string;
  readonly url: string;
}

/** requestsPerSecond: AMOUNT keep-alive requests through `url`, 16 connections */
async function requestsPerSecond(c: Case): Promise<{ rps: number; failed: number }> {
  const started = performance.now();
  const r = await autocannon({
    url: c.url,
    connections: CONNECTIONS,
    amount: AMOUNT,
    servername: SNI,
    tlsOptions: { rejectUnauthorized: false },
  } as autocannon.Options);
  const seconds = (performance.now() - started) / 1000;
  return { rps: r.requests.total / seconds, failed: r.errors + r.non2xx + r.timeouts };
}

/** connectionsPerSecond: NEW_CONNECTIONS connections through `url`, each one request, 16 at a time */
async function connectionsPerSecond(c: Case): Promise<{ cps: number; failed: number }> {
  let next = 0;
  let failed = 0;
  const secure = c.url.startsWith('https:');
  const one = () =>
    new Promise<void>((resolve) => {
      const options = { agent: secure ? false : new HttpAgent({ keepAlive: false }), headers: { connection: 'close' } };
      const req = secure
        ? httpsRequest(c.url, { ...options, servername: SNI, rejectUnauthorized: false })
        : httpRequest(c.url, options);
      req.on('response', (res) => {
        if (res.statusCode !== 200) failed++;
        res.resume();
        res.on('end', () => resolve());
      });
      req.on('error', () => {
        failed++;
        resolve();
      });
      req.end();
    });
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (next++ < NEW_CONNECTIONS) await one();
    }),
  );
  return { cps: NEW_CONNECTIONS / ((performance.now() - started) / 1000), failed };
}

export async function runGatewayL4(): Promise<void> {
  const [http, https, tcp, tls, plainTcp, plainTls] = await Promise.all(Array.from({ length: 6 }, () => freePort()));
  const backend = await startBackend(http!, https!);
  const plain = await startPlainStream(plainTcp!, plainTls!, http!, https!);
  const rendered = await startRendered(tcp!, tls!, http!, https!);
  const cases: Case[] = [
    { name: 'TCPRoute', url: `http://127.0.0.1:${tcp}/` },
    { name: 'plain stream TCP', url: `http://127.0.0.1:${plainTcp}/` },
    { name: 'TLSRoute passthrough', url: `https://127.0.0.1:${tls}/` },
    { name: 'plain stream TLS', url: `https://127.0.0.1:${plainTls}/` },
  ];
  const figures = new Map(cases.map((c) => [c.name, { rps: [] as number[], cps: [] as number[], failed: 0 }]));
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? cases : [...cases].reverse();
      for (const c of order) {
        const f = figures.get(c.name)!;
        const r = await requestsPerSecond(c);
        const n = await connectionsPerSecond(c);
        f.rps.push(r.rps);
        f.cps.push(n.cps);
        f.failed += r.failed + n.failed;
      }
    }
  } finally {
    await rendered.close();
    await plain.close();
    await backend.close();
  }
  const m = (name: string) => figures.get(name)!;
  console.log(`gateway-l4: ${ROUNDS} rounds, load average ${loadavg()[0]!.toFixed(1)}`);
  for (const c of cases) {
    const f = m(c.name);
    console.log(
      `  ${c.name.padEnd(22)} ${Math.round(median(f.rps)).toString().padStart(7)} req/s keep-alive, ` +
        `${Math.round(median(f.cps)).toString().padStart(6)} new connections/s, ${f.failed} failed`,
    );
  }
  const ratio = (a: number, b: number) => (a / b).toFixed(2);
  console.log(
    `  TCPRoute ÷ plain: requests ×${ratio(median(m('TCPRoute').rps), median(m('plain stream TCP').rps))}, ` +
      `connections ×${ratio(median(m('TCPRoute').cps), median(m('plain stream TCP').cps))}; ` +
      `TLSRoute ÷ plain: requests ×${ratio(median(m('TLSRoute passthrough').rps), median(m('plain stream TLS').rps))}, ` +
      `connections ×${ratio(median(m('TLSRoute passthrough').cps), median(m('plain stream TLS').cps))}`,
  );
}
