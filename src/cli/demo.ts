import { createServer, type Server } from 'node:http';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { execa } from 'execa';
import { buildModel, defaultBuildOptions } from '../model/build.js';
import { loadManifests } from '../manifests/load.js';
import { nginxBinary, testConfig } from '../nginx/binary.js';
import { writeConfigSet } from '../nginx/files.js';
import { waitForPort } from '../nginx/probe.js';
import { PROJECT_ROOT } from '../project-root.js';
import { loadTemplate } from '../render/load.js';
import { render } from '../render/render.js';
import type { CommandIo } from './command.js';
import { parsePort, UsageError } from './flags.js';
import { formatProblem } from './render.js';

export const DEMO_USAGE = `Usage: ingress-actors demo [--manifests DIR] [--http-port N] [--https-port N] [--dir DIR]

Renders the manifests (default: examples/), starts a small HTTP backend for every loopback
endpoint they name, and serves them with a real nginx. Ctrl-C stops everything.`;

function startBackend(service: string, port: number): Promise<Server> {
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'text/plain');
    res.end(`${service} (backend on 127.0.0.1:${port}) answered ${req.method} ${req.url} for Host ${req.headers.host}\n`);
  });
  return new Promise((ok, fail) => {
    server.once('error', (error) => fail(new Error(`cannot start the backend for ${service} on 127.0.0.1:${port}: ${error.message}`)));
    server.listen(port, '127.0.0.1', () => ok(server));
  });
}

/** runDemo is `ingress-actors demo`: examples in, a real nginx and backends on loopback, until Ctrl-C. */
export async function runDemo(argv: string[], { out, err, log }: CommandIo): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      manifests: { type: 'string' },
      'http-port': { type: 'string' },
      'https-port': { type: 'string' },
      dir: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return out.write(`${DEMO_USAGE}\n`), 0;
  const httpPort = parsePort('--http-port', values['http-port'], 8080);
  const httpsPort = parsePort('--https-port', values['https-port'], 8443);
  const dir = resolve(values.dir ?? '.demo/conf');
  const snapshot = await loadManifests([values.manifests ?? join(PROJECT_ROOT, 'examples')]);
  const { model, problems } = buildModel(snapshot, { ...defaultBuildOptions, configMap: 'ingress-actors/ingress-actors', httpPort, httpsPort });
  for (const problem of problems) err.write(`${formatProblem(problem)}\n`);
  const conf = await writeConfigSet(dir, render(model, await loadTemplate()), model.certificates);
  const verdict = await testConfig(nginxBinary(), dir, conf);
  if (!verdict.ok) throw new UsageError(`nginx -t refused the demo config:\n${verdict.output}`);

  const backends: Server[] = [];
  for (const upstream of model.upstreams) {
    for (const { address } of upstream.endpoints) {
      const [host, port] = address.split(':');
      if (host === '127.0.0.1' && !backends.some((b) => (b.address() as { port: number }).port === Number(port))) {
        backends.push(await startBackend(upstream.service, Number(port)));
      }
    }
  }
  const nginx = execa(nginxBinary(), ['-p', `${dir}/`, '-c', conf, '-g', 'daemon off;'], { reject: false, stdio: ['ignore', 'inherit', 'inherit'], detached: true });
  const stop = async () => {
    log.info('stopping nginx and the backends');
    if (nginx.pid) process.kill(nginx.pid, 'SIGQUIT'); // graceful: in-flight requests finish
    await nginx;
    for (const backend of backends) backend.closeAllConnections(), backend.close();
  };
  await Promise.race([waitForPort(httpPort), nginx.then((r) => Promise.reject(new Error(`nginx exited: ${r.exitCode}`)))]);
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());

  const lines = [`nginx is serving ${conf} on 127.0.0.1:${httpPort} (http) and :${httpsPort} (https). Try:`];
  for (const server of model.servers) {
    const location = server.locations.find((l) => l.upstream !== null);
    if (!location) continue;
    const path = location.match.endsWith('/') && location.match !== '/' ? location.match : location.path;
    const tls = server.locations.some((l) => l.sslRedirect);
    lines.push(
      tls
        ? `  curl -k --resolve ${server.host}:${httpsPort}:127.0.0.1 https://${server.host}:${httpsPort}${path}`
        : `  curl -H 'Host: ${server.host}' http://127.0.0.1:${httpPort}${path}`,
    );
  }
  lines.push(`  curl -i -H 'Host: unknown.example' http://127.0.0.1:${httpPort}/   (404 from the default server)`, 'Ctrl-C stops it.');
  log.info({ conf, httpPort, httpsPort, backends: backends.length }, 'demo ready');
  out.write(`${lines.join('\n')}\n`);
  const result = await nginx;
  return result.exitCode === 0 || result.signal === 'SIGQUIT' ? 0 : 1;
}
