/**
 * startApiServer: a Kubernetes API server on loopback for the tests and the demo. HTTPS with a CA
 * made at start, bearer-token auth, and a kubeconfig that kubectl and client-node both accept.
 * The handle also exposes the registry (to change the cluster without a client) and the faults
 * tests need: dropping every watch connection, compacting history so old versions get 410, and
 * answering every request with an error status (or not at all) for a while.
 */
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { stringify } from 'yaml';
import { issueCertificate } from '../../tls/issue.js';
import type { ServiceNetwork } from './admission.js';
import { sendError } from './http.js';
import { Registry, type Manifest } from './registry.js';
import { ResourceTable, type ResourceDef } from './resources.js';
import { Router } from './router.js';
import { ApiError } from './status.js';
import { Store } from './store.js';
import { Watches, type WatchSettings } from './watch.js';

/** ApiServerOptions configure startApiServer; every field has a default. */
export interface ApiServerOptions {
  /** TCP port on 127.0.0.1; 0 (the default) picks a free one. */
  readonly port?: number;
  /** The bearer token clients must send; random by default. */
  readonly token?: string;
  /** Objects created at start, namespaces first; missing namespaces are created for them. */
  readonly seed?: readonly Manifest[];
  /** How many events the history window keeps for resuming watches (default 1000). */
  readonly historyLimit?: number;
  /** Bookmark interval for watches that allow bookmarks (default 60 s, as kube-apiserver). */
  readonly bookmarkIntervalMs?: number;
  /** How a watch from a compacted resourceVersion is refused (default `event`, see WatchSettings). */
  readonly goneAs?: WatchSettings['goneAs'];
  /** How long a deleted namespace stays Terminating (default 500 ms, see RegistryOptions). */
  readonly namespaceDeletionDelayMs?: number;
  /**
   * Kinds served beside RESOURCES, in discovery, OpenAPI and the REST paths, e.g. DEPLOY_RESOURCES
   * (resources.ts) so that `kubectl apply -f deploy/kubernetes/` works. Seeds may use them.
   */
  readonly extraKinds?: readonly ResourceDef[];
  /**
   * Where a ValidatingWebhookConfiguration's `clientConfig.service` is reached (the cluster network's stand-in);
   * without it, or for a Service it does not route, such a webhook cannot be called.
   */
  readonly serviceNetwork?: ServiceNetwork;
  /** Called once per request after it is answered, e.g. to log `GET /api/v1/... 200`. */
  readonly onRequest?: (line: { method: string; url: string; status: number }) => void;
}

/**
 * RequestFault is what `failRequests` makes the server do with each request it receives:
 * answer a Status with this HTTP code (500 InternalError, 503 ServiceUnavailable, 504 Timeout, …),
 * or `hang`: read the request and never answer, until the fault is cleared or replaced, when the
 * held connections are destroyed (what a client sees when an overloaded server finally gives up).
 */
export type RequestFault = { readonly status: number } | { readonly hang: true };

const FAULT_REASONS: Readonly<Record<number, string>> = {
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/** ApiServer is a running server and the controls tests use on it. */
export interface ApiServer {
  /** The server URL, `https://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  readonly token: string;
  /** The CA certificate that signed the serving certificate, PEM. */
  readonly caPem: string;
  /** A kubeconfig (context `ingress-actors`, namespace default) with certificate-authority-data. */
  readonly kubeconfigText: string;
  /** writeKubeconfig writes kubeconfigText to a file, readable by its owner only. */
  writeKubeconfig(path: string): Promise<void>;
  /** The object API behind the HTTP handlers, for changing state without a client. */
  readonly registry: Registry;
  /** What this server serves: RESOURCES and its `extraKinds` (look their ResourceDefs up here for registry calls). */
  readonly resources: ResourceTable;
  /** The storage behind the registry: resourceVersion counter, history, subscribers. */
  readonly store: Store;
  /** Live watch settings (bookmark interval, how 410 is sent); changes apply to new watches. */
  readonly watchSettings: WatchSettings;
  /** The number of watch streams open now. */
  readonly openWatches: () => number;
  /** dropWatches ends every open watch stream (with `abrupt`, destroys the connections instead); returns how many. */
  dropWatches(options?: { abrupt?: boolean }): number;
  /** compact forgets the history, so watches from any older resourceVersion get 410 Gone. */
  compact(): void;
  /**
   * failRequests makes every request received from now on fail as `fault` says (watch streams
   * already open are left alone: drop them too to make clients reconnect into the fault); null
   * serves normally again. Returns how many requests the previous fault failed or held.
   */
  failRequests(fault: RequestFault | null): number;
  /** pause stops listening and cuts every connection, as a crashed API server would; state is kept. */
  pause(): Promise<void>;
  /** resume listens again on the same port with the same certificate, token and objects. */
  resume(): Promise<void>;
  /** close ends all watches and connections and stops listening. */
  close(): Promise<void>;
}

const CONTEXT = 'ingress-actors';

/** kubeconfigFor builds the kubeconfig YAML for a server URL, CA and token. */
export function kubeconfigFor(url: string, caPem: string, token: string): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: CONTEXT, cluster: { server: url, 'certificate-authority-data': Buffer.from(caPem).toString('base64') } },
    ],
    users: [{ name: CONTEXT, user: { token } }],
    contexts: [{ name: CONTEXT, context: { cluster: CONTEXT, user: CONTEXT, namespace: 'default' } }],
    'current-context': CONTEXT,
    preferences: {},
  });
}

function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

const isCrdManifest = (o: Manifest): boolean =>
  o.kind === 'CustomResourceDefinition' && o.apiVersion === 'apiextensions.k8s.io/v1';

/** Seed order: namespaces before what lives in them, CRDs before their objects, everything else as given. */
function seedOrder(seed: readonly Manifest[]): Manifest[] {
  return [
    ...seed.filter((o) => o.kind === 'Namespace'),
    ...seed.filter(isCrdManifest),
    ...seed.filter((o) => o.kind !== 'Namespace' && !isCrdManifest(o)),
  ];
}

/** startApiServer starts the server and resolves once it listens. */
export async function startApiServer(options: ApiServerOptions = {}): Promise<ApiServer> {
  const token = options.token ?? randomBytes(24).toString('base64url');
  const ca = await issueCertificate({ commonName: 'ingress-actors-ca', isCa: true });
  const serving = await issueCertificate({
    commonName: 'ingress-actors-apiserver',
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1'],
    issuer: ca,
  });
  const store = new Store(options.historyLimit ?? 1000);
  const resources = new ResourceTable(options.extraKinds);
  const registry = new Registry(store, {
    resources,
    ...(options.namespaceDeletionDelayMs === undefined
      ? {}
      : { namespaceDeletionDelayMs: options.namespaceDeletionDelayMs }),
  });
  for (const object of seedOrder(options.seed ?? [])) registry.apply(object);
  const watchSettings: WatchSettings = {
    bookmarkIntervalMs: options.bookmarkIntervalMs ?? 60_000,
    goneAs: options.goneAs ?? 'event',
  };
  const watches = new Watches(registry, watchSettings);
  const router = new Router(registry, watches, options.serviceNetwork);
  const expected = `Bearer ${token}`;
  let fault: RequestFault | null = null;
  let faulted = 0;
  const held = new Set<ServerResponse>();
  const releaseHeld = () => {
    for (const res of held) res.destroy();
    held.clear();
  };

  const server = createServer({ key: serving.keyPem, cert: serving.certPem }, (req, res) => {
    if (options.onRequest) {
      const line = { method: req.method ?? '', url: req.url ?? '' };
      // 'close' rather than 'finish': a watch the client abandons never finishes.
      res.on('close', () => options.onRequest?.({ ...line, status: res.statusCode }));
    }
    if (fault) {
      faulted++;
      req.resume();
      if ('hang' in fault) {
        held.add(res);
        res.on('close', () => held.delete(res));
        return;
      }
      const reason = FAULT_REASONS[fault.status] ?? 'InternalError';
      sendError(res, new ApiError(fault.status, reason, `injected fault: every request answers ${fault.status}`));
      return;
    }
    // No anonymous access (as with --anonymous-auth=false): every path needs the token.
    if (req.headers.authorization !== expected) {
      req.resume();
      sendError(res, new ApiError(401, 'Unauthorized', 'Unauthorized'));
      return;
    }
    void router.handle(req, res);
  });
  // Every TCP connection, from accept on: closeAllConnections knows only those that got as far as
  // HTTP, and one still in its TLS handshake would otherwise outlive pause() and close() (and keep
  // them waiting for ever, as a request on it then arrives at a closed server).
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  const cutAll = () => {
    server.closeAllConnections();
    for (const socket of sockets) socket.destroy();
    sockets.clear();
  };
  const port = await listen(server, options.port ?? 0);
  const url = `https://127.0.0.1:${port}`;
  const kubeconfigText = kubeconfigFor(url, ca.certPem, token);

  return {
    url,
    port,
    token,
    caPem: ca.certPem,
    kubeconfigText,
    writeKubeconfig: (path) => writeFile(path, kubeconfigText, { mode: 0o600 }),
    registry,
    resources,
    store,
    watchSettings,
    openWatches: () => watches.count,
    dropWatches: (dropOptions) => watches.drop(dropOptions),
    compact: () => store.compact(),
    failRequests: (next) => {
      const count = faulted;
      faulted = 0;
      fault = next;
      releaseHeld();
      return count;
    },
    pause: async () => {
      watches.drop({ abrupt: true });
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      cutAll();
      await closed;
    },
    resume: async () => void (await listen(server, port)),
    close: async () => {
      fault = null;
      releaseHeld();
      watches.drop();
      if (!server.listening) return;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      cutAll();
      await closed;
    },
  };
}
