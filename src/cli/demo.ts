import { createServer, type Server } from 'node:http';
import { mkdir, readFile, readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DEPLOY_RESOURCES } from '../kube/api-server/resources.js';
import { startApiServer } from '../kube/api-server/server.js';
import { startController } from '../main.js';
import { parseManifests } from '../manifests/load.js';
import type { EndpointSlice, KubeObject } from '../model/snapshot.js';
import { PROJECT_ROOT } from '../project-root.js';
import type { CommandIo } from './command.js';
import { parseControllerFlags } from './controller-flags.js';
import { parsePort, UsageError } from './flags.js';

export const DEMO_USAGE = `Usage: ingress-actors demo [--manifests DIR] [--http-port N] [--https-port N] [--dir DIR]

The embedded cluster: a local HTTPS Kubernetes API server seeded with the manifests (default
examples/), a small HTTP backend for every loopback endpoint they name, and the controller
with a real nginx. Writes DIR/kubeconfig (default .demo/) for kubectl. Ctrl-C stops it all.
The API server also serves the kinds of deploy/kubernetes/ (ServiceAccount, RBAC, Deployment,
PodDisruptionBudget), so \`kubectl apply -f deploy/kubernetes/\` works against it: they are
stored, nothing runs them (its ConfigMap is the one the demo controller reads).`;

function startBackend(service: string, port: number): Promise<Server> {
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'text/plain');
    res.end(`${service} (backend on 127.0.0.1:${port}) answered ${req.method} ${req.url} for Host ${req.headers.host}\n`);
  });
  return new Promise((ok, fail) => {
    server.once('error', (error) => fail(new UsageError(`cannot start the backend for ${service} on 127.0.0.1:${port}: ${error.message}`)));
    server.listen(port, '127.0.0.1', () => ok(server));
  });
}

async function readSeed(folder: string): Promise<KubeObject[]> {
  const files = (await readdir(folder)).filter((f) => /\.ya?ml$/.test(f)).sort();
  const objects: KubeObject[] = [];
  for (const file of files) objects.push(...parseManifests(await readFile(join(folder, file), 'utf8'), join(folder, file)));
  return objects;
}

/** runDemo is `ingress-actors demo`: the embedded cluster, until Ctrl-C; exits as the controller does. */
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
  const dir = resolve(values.dir ?? '.demo');
  await mkdir(dir, { recursive: true });

  const seed = await readSeed(values.manifests ?? join(PROJECT_ROOT, 'examples'));
  const api = await startApiServer({ seed, extraKinds: DEPLOY_RESOURCES });
  const kubeconfig = join(dir, 'kubeconfig');
  await api.writeKubeconfig(kubeconfig);

  const backends: Server[] = [];
  const ports = new Set<number>();
  for (const slice of seed.filter((o) => o.kind === 'EndpointSlice') as EndpointSlice[]) {
    const service = `${slice.metadata?.namespace ?? 'default'}/${slice.metadata?.labels?.['kubernetes.io/service-name']}`;
    for (const port of slice.ports ?? []) {
      const onLoopback = (slice.endpoints ?? []).some((e) => e.addresses?.includes('127.0.0.1'));
      if (port.port && onLoopback && !ports.has(port.port)) {
        ports.add(port.port);
        backends.push(await startBackend(service, port.port));
      }
    }
  }

  const parsed = parseControllerFlags([
    '--kubeconfig', kubeconfig, '--http-port', String(httpPort), '--https-port', String(httpsPort),
    '--config-dir', join(dir, 'nginx'), '--configmap', 'ingress-actors/ingress-actors', '--sync-rate-limit', '2',
    '--shutdown-timeout', '5',
  ]);
  if ('help' in parsed) return 2;
  const controller = await startController(parsed.config, log);
  const stop = () => controller.stop();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const firstSync = new Promise<void>((ok) => {
    const sub = controller.root.system.get('nginx')?.subscribe((s: { context: { reloadsOk: number } }) => {
      if (s.context.reloadsOk > 0) ok(void sub?.unsubscribe());
    });
  });
  const first = await Promise.race([firstSync.then(() => 'served' as const), controller.exitCode.then(() => 'exited' as const)]);
  if (first === 'exited') {
    // The controller gave up before serving (nginx missing, a port in use): say why, tidy up.
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    for (const backend of backends) backend.closeAllConnections(), backend.close();
    await api.close();
    err.write(`ingress-actors demo: ${(await controller.reason) ?? 'the controller stopped'}\n`);
    return 1;
  }

  const k = `kubectl --kubeconfig ${kubeconfig}`;
  out.write(
    [
      `The demo cluster is up: API server ${api.url}, nginx on 127.0.0.1:${httpPort} (http) and :${httpsPort} (https).`,
      'Try:',
      `  curl -H 'Host: hello.demo.local' http://127.0.0.1:${httpPort}/`,
      `  curl -H 'Host: api.demo.local' http://127.0.0.1:${httpPort}/v2/users`,
      `  curl -k --resolve secure.demo.local:${httpsPort}:127.0.0.1 https://secure.demo.local:${httpsPort}/`,
      `  curl -i -H 'Host: secure.demo.local' http://127.0.0.1:${httpPort}/      (308 to https)`,
      `  ${k} get ingress,svc,endpointslices -A`,
      `  ${k} apply -f demo/moved-api.yaml   (then: curl -H 'Host: api.demo.local' http://127.0.0.1:${httpPort}/v3/)`,
      'Ctrl-C stops it.',
      '',
    ].join('\n'),
  );
  const code = await controller.exitCode;
  process.off('SIGINT', stop);
  process.off('SIGTERM', stop);
  for (const backend of backends) backend.closeAllConnections(), backend.close();
  await api.close();
  if (code !== 0) err.write('ingress-actors demo: the controller did not stop cleanly\n');
  return code;
}
