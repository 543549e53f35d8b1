import { createServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { mkdir, readFile, readdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { gatewayApiCrds } from '../dev/api-server/gateway-api.js';
import { DEPLOY_RESOURCES } from '../dev/api-server/resources.js';
import { startApiServer, type ApiServer } from '../dev/api-server/server.js';
import { parseManifests } from '../manifests/load.js';
import type { EndpointSlice, KubeObject } from '../model/snapshot.js';
import { PROJECT_ROOT } from '../project-root.js';
import type { CommandIo } from './command.js';
import { StopSignals, superviseController } from './controller.js';
import { parseControllerFlags } from './controller-flags.js';
import { parsePort } from './flags.js';
import { UsageError } from '../usage-error.js';
import { nginxBinary } from '../nginx/binary.js';
import { ingressWebhookConfiguration, WEBHOOK_PATH } from '../http/webhook.js';
import { versionText } from './version.js';
import { observeSystem } from '../http/observed.js';
import { selectNginxHealth } from '../../machines/selectors/nginxProcess.js';

export const DEMO_USAGE =
  'Usage: ingress-actors demo [--manifests DIR] [--http-port N (8080)] [--https-port N ' +
  `(8443)] [--webhook-port N (8444)] [--dir DIR]
                         [controller flags: --inspect, --inspect-port N (8090), --healthz-port N, ...]

The embedded cluster: a local HTTPS Kubernetes API server seeded with the manifests (default
examples/; then the Gateway API's standard-channel CRDs, deploy/gateway-api/, and DIR/gateway-api/'s
manifests), a small HTTP backend for every loopback endpoint they name (on a free port when
its own is taken: the demo prints where), and the controller
with a real nginx, everything on 127.0.0.1 only. A default port another program holds (8080, 8443,
8444, the status page's 10254) moves to a free one too, printed; a port given is used as given. Writes DIR/kubeconfig (default .demo/) for
kubectl. Ctrl-C (or SIGTERM) stops it all. Any controller flag (see: ingress-actors help
controller) is passed on, but for the ones the demo sets itself (--kubeconfig, --config-dir,
--healthz-host). The API server also serves the kinds of deploy/ (ServiceAccount, RBAC, Deployment,
PodDisruptionBudget, NetworkPolicy, cert-manager's Issuer and Certificate), so \`kubectl apply -f deploy/kubernetes/\`
and \`kubectl apply -k deploy/kustomize/overlays/…\` work against it: they are
stored, nothing runs them (its ConfigMap is the one the demo controller reads). The controller's admission
webhook listens on 127.0.0.1:N (--webhook-port) with a certificate it makes itself, as deploy/'s overlays run it
(--validating-webhook-secret: the Secret ingress-actors/ingress-actors-admission, the key only in memory), and
sets the caBundle of the ValidatingWebhookConfiguration ingress-actors-admission, whose clientConfig.service the
API server reaches on that port: \`kubectl apply\` of a bad Ingress is refused with its message.`;

/** The demo's own flags; every other flag goes to the controller. */
const DEMO_FLAGS = new Set(['manifests', 'http-port', 'https-port', 'webhook-port', 'dir']);
/** Controller flags the demo sets itself: passing them would point it elsewhere, or off loopback. */
const OWNED = new Set(['kubeconfig', 'config-dir', 'healthz-host']);

/** splitDemoFlags separates the demo's own flags from the controller flags it passes on. */
export function splitDemoFlags(argv: readonly string[]): {
  own: Map<string, string>;
  help: boolean;
  controller: string[];
} {
  const own = new Map<string, string>();
  const controller: string[] = [];
  let help = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--help' || arg === '-h') {
      help = true;
      continue;
    }
    const [, name, inline] = /^--([a-z-]+)(?:=(.*))?$/s.exec(arg) ?? [];
    if (name !== undefined && OWNED.has(name)) throw new UsageError(`--${name}: the demo sets it itself`, DEMO_USAGE);
    if (name === undefined || !DEMO_FLAGS.has(name)) {
      controller.push(arg);
      continue;
    }
    const value = inline ?? argv[++i];
    if (value === undefined || (inline === undefined && value.startsWith('-')))
      throw new UsageError(`--${name} needs a value`, DEMO_USAGE);
    own.set(name, value);
  }
  return { own, help, controller };
}

/**
 * defaultPort is where the demo listens for something the user gave no port for: `port` (8080, 8443, …), or a free one
 * the kernel picks when another program holds it (a second demo, a dev server), as a backend's taken port moves. A
 * port the user gave is used as given (taken, the controller says so and the demo ends).
 */
async function defaultPort(port: number): Promise<{ port: number; taken: boolean }> {
  const probe = (at: number) =>
    new Promise<number>((ok, fail) => {
      const server = createNetServer();
      server.once('error', fail);
      server.listen(at, '127.0.0.1', () => {
        const { port: bound } = server.address() as AddressInfo;
        server.close(() => ok(bound));
      });
    });
  try {
    return { port: await probe(port), taken: false };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    return { port: await probe(0), taken: true };
  }
}

/** demoPort is the port of a demo flag: as given, else its default, moved when taken (its line in `moved`). */
async function demoPort(flag: string, given: string | undefined, fallback: number, moved: string[]): Promise<number> {
  if (given !== undefined) return parsePort(flag, given, fallback);
  const { port, taken } = await defaultPort(fallback);
  if (taken) moved.push(`${flag.slice(2)} on 127.0.0.1:${port} (${fallback} is taken)`);
  return port;
}

/** listenBackend listens on 127.0.0.1:port (0: one the kernel picks) with the demo's echoing backend. */
function listenBackend(service: string, port: number): Promise<Server> {
  const server = createServer((req, res) => {
    const { port: at } = server.address() as AddressInfo;
    res.setHeader('content-type', 'text/plain');
    res.end(`${service} (backend on 127.0.0.1:${at}) answered ${req.method} ${req.url} for Host ${req.headers.host}\n`);
  });
  return new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(port, '127.0.0.1', () => ok(server));
  });
}

/**
 * startBackend starts the backend of a loopback endpoint on the port its EndpointSlice names or, when that port is
 * taken (8081-8084 are common ports; a second demo holds them), on a free one the kernel picks.
 */
async function startBackend(service: string, port: number): Promise<Server> {
  try {
    return await listenBackend(service, port);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE')
      throw new UsageError(`cannot start the backend for ${service} on 127.0.0.1:${port}: ${(error as Error).message}`);
    return listenBackend(service, 0);
  }
}

/**
 * startBackends starts a backend for every port of every EndpointSlice with a loopback endpoint, and returns the seed
 * with those slices' ports set to where their backends listen (a port taken moves), and one line per backend.
 */
async function startBackends(
  seed: readonly KubeObject[],
  backends: Server[],
): Promise<{ seed: KubeObject[]; lines: string[] }> {
  const moved = new Map<number, number>();
  const lines: string[] = [];
  for (const slice of seed.filter((o) => o.kind === 'EndpointSlice') as EndpointSlice[]) {
    const service =
      `${slice.metadata?.namespace ?? 'default'}/` + `${slice.metadata?.labels?.['kubernetes.io/service-name']}`;
    const onLoopback = (slice.endpoints ?? []).some((e) => e.addresses?.includes('127.0.0.1'));
    for (const port of slice.ports ?? []) {
      if (!port.port || !onLoopback || moved.has(port.port)) continue;
      const backend = await startBackend(service, port.port);
      backends.push(backend);
      const at = (backend.address() as AddressInfo).port;
      moved.set(port.port, at);
      lines.push(`${service} on 127.0.0.1:${at}${at === port.port ? '' : ` (${port.port} is taken)`}`);
    }
  }
  const rewritten = seed.map((object) => {
    const slice = object as EndpointSlice;
    if (object.kind !== 'EndpointSlice' || !(slice.endpoints ?? []).some((e) => e.addresses?.includes('127.0.0.1')))
      return object;
    const ports = (slice.ports ?? []).map((p) =>
      p.port && moved.has(p.port) ? { ...p, port: moved.get(p.port)! } : p,
    );
    return { ...slice, ports } as KubeObject;
  });
  return { seed: rewritten, lines };
}

async function readSeed(folder: string): Promise<KubeObject[]> {
  const files = (await readdir(folder)).filter((f) => /\.ya?ml$/.test(f)).sort();
  const objects: KubeObject[] = [];
  for (const file of files)
    objects.push(...parseManifests(await readFile(join(folder, file), 'utf8'), join(folder, file)));
  return objects;
}

/**
 * readGatewaySeed is the Gateway API part of the seed: the vendored CRDs (every demo cluster serves the
 * Gateway kinds), then the manifests of
 * the folder's gateway-api/ (examples/gateway-api/ by default), if it has one. They live in a folder of
 * their own so that the folder's top level stays the Ingress manifests `render --manifests` reads.
 */
async function readGatewaySeed(folder: string): Promise<KubeObject[]> {
  const crds = gatewayApiCrds();
  const own = join(folder, 'gateway-api');
  const isFolder = await stat(own).then(
    (s) => s.isDirectory(),
    () => false,
  );
  return [...crds, ...(isFolder ? await readSeed(own) : [])];
}

/** demoControllerFlags parses the controller flags; a flag it does not know is shown with the demo's usage. */
function demoControllerFlags(argv: string[]): ReturnType<typeof parseControllerFlags> {
  try {
    return parseControllerFlags(argv);
  } catch (error) {
    throw error instanceof UsageError && error.usage ? new UsageError(error.message, DEMO_USAGE) : error;
  }
}

/** runDemo is `ingress-actors demo`: the embedded cluster, until Ctrl-C or SIGTERM; exits as the controller does. */
export async function runDemo(argv: string[], { out, err, log }: CommandIo): Promise<number> {
  const { own, help, controller: passed } = splitDemoFlags(argv);
  if (help) return (out.write(`${DEMO_USAGE}\n`), 0);
  // The listeners' default ports move when taken, as the backends' do; the lines say where.
  const moved: string[] = [];
  const httpPort = await demoPort('--http-port', own.get('http-port'), 8080, moved);
  const httpsPort = await demoPort('--https-port', own.get('https-port'), 8443, moved);
  const webhookPort = await demoPort('--webhook-port', own.get('webhook-port'), 8444, moved);
  const givenHealthz = passed.some((a) => a === '--healthz-port' || a.startsWith('--healthz-port='));
  const healthzPort = givenHealthz
    ? []
    : ['--healthz-port', String(await demoPort('--healthz-port', undefined, 10254, moved))];
  const dir = resolve(own.get('dir') ?? '.demo');
  await mkdir(dir, { recursive: true });
  const kubeconfig = join(dir, 'kubeconfig');
  const inspectPort = passed.some((a) => a === '--inspect-port' || a.startsWith('--inspect-port='))
    ? []
    : ['--inspect-port', '8090'];
  const inspect = passed.some((a) => a === '--inspect' || a.startsWith('--inspect-port'));
  // The demo's settings first: a flag passed on comes later and wins (parseArgs keeps the last).
  const parsed = demoControllerFlags([
    '--kubeconfig',
    kubeconfig,
    '--http-port',
    String(httpPort),
    '--https-port',
    String(httpsPort),
    ...healthzPort,
    '--config-dir',
    join(dir, 'nginx'),
    '--configmap',
    'ingress-actors/ingress-actors',
    '--sync-rate-limit',
    '2',
    '--shutdown-timeout',
    '5',
    '--healthz-host',
    '127.0.0.1',
    '--publish-status-address',
    '127.0.0.1',
    '--validating-webhook',
    `127.0.0.1:${webhookPort}`,
    '--validating-webhook-secret',
    `${WEBHOOK.namespace}/${WEBHOOK.name}`,
    '--validating-webhook-service',
    `${WEBHOOK.namespace}/${WEBHOOK.name}`,
    '--validating-webhook-configuration',
    WEBHOOK.name,
    ...(inspect ? inspectPort : []),
    ...passed,
  ]);
  if ('help' in parsed) return (out.write(`${DEMO_USAGE}\n`), 0);
  if ('version' in parsed) return (out.write(await versionText(nginxBinary())), 0);
  // Loopback only: nginx too, not only the API server, backends, probes and inspector.
  const config = { ...parsed.config, build: { ...parsed.config.build, listenAddress: '127.0.0.1' } };
  const manifests = own.get('manifests') ?? join(PROJECT_ROOT, 'examples');
  const loaded = [...(await readSeed(manifests)), ...(await readGatewaySeed(manifests))];

  // From here on, whatever fails or stops, everything started is closed: nothing keeps the process alive.
  const signals = new StopSignals();
  const backends: Server[] = [];
  let api: ApiServer | null = null;
  try {
    // The backends first: a port taken moves, and the seeded EndpointSlices say where.
    const started = await startBackends(loaded, backends);
    const seed = started.seed;
    if (signals.received) return 0;
    const webhookAt = config.webhook?.port;
    api = await startApiServer({
      // The configuration is there from the start, without a caBundle: the controller sets it. Nothing writes an
      // Ingress before (the status goes to /status, which its rules do not name), and the hints wait for it.
      seed: config.webhook ? [...seed, webhookConfiguration()] : seed,
      extraKinds: DEPLOY_RESOURCES,
      // The cluster network's part: the webhook's Service is its port on loopback.
      serviceNetwork: ({ namespace, name }) =>
        namespace === WEBHOOK.namespace && name === WEBHOOK.name && webhookAt !== undefined
          ? { host: '127.0.0.1', port: webhookAt }
          : undefined,
    });
    await api.writeKubeconfig(kubeconfig);
    if (signals.received) return 0;
    const apiUrl = api.url;
    const code = await superviseController(config, log, signals, err, async (controller, inspector) => {
      // The nginx actor exists only once boot's config check passed: look for its first reload.
      const actors = observeSystem(controller.root.system);
      await new Promise<void>((ok) => {
        const timer = setInterval(() => {
          if (selectNginxHealth(actors.nginx()).servesClusterConfig) ok(clearInterval(timer));
        }, 25);
        void controller.exitCode.then(() => clearInterval(timer));
      });
      // From the caBundle on, the API server asks the webhook about every Ingress written.
      if (config.webhook) await caBundleSet(api!, controller.exitCode);
      const statusPage = config.statusPage === 'off' ? null : `http://127.0.0.1:${config.healthzPort}/`;
      out.write(
        hints(apiUrl, kubeconfig, httpPort, httpsPort, inspector?.url ?? null, statusPage, started.lines, moved),
      );
    });
    if (code !== 0) err.write('ingress-actors demo: the controller did not stop cleanly\n');
    return code;
  } finally {
    signals.dispose();
    for (const backend of backends) backend.closeAllConnections(), backend.close();
    await api?.close();
  }
}

/** hints is what the demo prints once nginx serves the manifests. */
function hints(
  apiUrl: string,
  kubeconfig: string,
  httpPort: number,
  httpsPort: number,
  inspector: string | null,
  statusPage: string | null,
  backends: readonly string[],
  moved: readonly string[],
): string {
  const k = `kubectl --kubeconfig ${kubeconfig}`;
  return [
    `The demo cluster is up: API server ${apiUrl}, nginx on 127.0.0.1:${httpPort} (http) and :${httpsPort} (https).`,
    ...(moved.length > 0 ? [`Ports moved: ${moved.join(', ')}.`] : []),
    ...(backends.length > 0 ? [`The backends: ${backends.join(', ')}.`] : []),
    ...(statusPage ? [`The status page: open ${statusPage}`] : []),
    ...(inspector ? [`The Stately inspector: open ${inspector}`] : []),
    'Try:',
    `  curl -H 'Host: hello.demo.local' http://127.0.0.1:${httpPort}/`,
    `  curl -H 'Host: api.demo.local' http://127.0.0.1:${httpPort}/v2/users`,
    `  curl -H 'Host: gateway.demo.local' http://127.0.0.1:${httpPort}/      (an HTTPRoute of the Gateway API)`,
    `  curl -k --resolve secure.demo.local:${httpsPort}:127.0.0.1 https://secure.demo.local:${httpsPort}/`,
    `  curl -i -H 'Host: secure.demo.local' http://127.0.0.1:${httpPort}/      (308 to https)`,
    `  ${k} get ingress,svc,endpointslices -A`,
    `  ${k} get gatewayclasses,gateways,httproutes -A   (the Gateway API, examples/gateway-api/)`,
    `  ${k} apply -f demo/moved-api.yaml   (then: curl -H 'Host: api.demo.local' http://127.0.0.1:${httpPort}/v3/)`,
    `  ${k} apply -f demo/bad-ingress.yaml   (refused by the admission webhook, with its reasons)`,
    'Ctrl-C stops it.',
    '',
  ].join('\n');
}

/** WEBHOOK names the webhook's Secret, Service and configuration, as deploy/'s components do. */
const WEBHOOK = { namespace: 'ingress-actors', name: 'ingress-actors-admission' } as const;

/** caBundleSet resolves once the controller has set the configuration's caBundle (or has stopped). */
function caBundleSet(api: ApiServer, stopped: Promise<unknown>): Promise<void> {
  const configs = api.resources.find('admissionregistration.k8s.io', 'v1', 'validatingwebhookconfigurations')!;
  return new Promise<void>((ok) => {
    const timer = setInterval(() => {
      const vwc = api.registry.store.get(configs, undefined, WEBHOOK.name) as
        | { webhooks?: { clientConfig?: { caBundle?: string } }[] }
        | undefined;
      if (vwc?.webhooks?.every((w) => w.clientConfig?.caBundle)) ok(clearInterval(timer));
    }, 25);
    void stopped.then(() => ok(clearInterval(timer)));
  });
}

/** webhookConfiguration is ingress-nginx's chart's ValidatingWebhookConfiguration, calling the webhook's Service. */
function webhookConfiguration(): KubeObject {
  const service = { ...WEBHOOK, port: 443, path: WEBHOOK_PATH };
  return ingressWebhookConfiguration(WEBHOOK.name, { service }, { timeoutSeconds: 10 }) as KubeObject;
}
