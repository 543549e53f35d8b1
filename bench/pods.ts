/**
 * Pods for the endpoint benchmarks: HTTP servers on loopback addresses (127.0.0.2 … 127.0.0.254,
 * then around again, skipping addresses still in use) that answer with their name (`address#n`), one
 * Service `app` whose one EndpointSlice lists them, and keep-alive clients that never retry.
 */
import { Agent, createServer, request, type Server } from 'node:http';
import { ingress, ingressClass } from '../test/support/manifests.js';

/** EndpointState is how a pod's endpoint appears in the slice. */
export type EndpointState = 'ready' | 'terminating';

const FIRST = 2;
const LAST = 254;

/** Pods starts and stops pod servers on one port and allocates their addresses. */
export class Pods {
  private readonly servers = new Map<string, Server>();
  private readonly names = new Map<string, string>();
  private next = FIRST;
  /** every pod (by name: an address is used again once it wraps around) that answered a client request */
  readonly answered = new Set<string>();
  /** pods started so far (each one's name ends in its number) */
  started = 0;

  constructor(readonly port: number) {}

  /** start listens on the next free address and resolves to it. */
  async start(): Promise<string> {
    let ip = '';
    for (let tries = 0; tries <= LAST - FIRST; tries++) {
      const candidate = `127.0.0.${this.next}`;
      this.next = this.next === LAST ? FIRST : this.next + 1;
      if (!this.servers.has(candidate)) {
        ip = candidate;
        break;
      }
    }
    if (!ip) throw new Error('every loopback address 127.0.0.2-254 is taken by a running pod');
    const name = `${ip}#${++this.started}`;
    const server = createServer((_req, res) => res.end(name));
    // Longer than nginx keeps idle upstream connections (60 s): Node's 5 s default closes ones nginx may reuse.
    server.keepAliveTimeout = 75_000;
    this.servers.set(ip, server);
    this.names.set(ip, name);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, ip, resolve);
    });
    return ip;
  }

  /** nameOf is what the pod running on `ip` answers. */
  nameOf(ip: string): string | undefined {
    return this.names.get(ip);
  }

  /** stop closes a pod as a process that exits would: idle connections at once, busy ones after their answer. */
  async stop(ip: string): Promise<void> {
    const server = this.servers.get(ip);
    if (!server) return;
    this.servers.delete(ip);
    this.names.delete(ip);
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    await closed;
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.servers.keys()].map((ip) => this.stop(ip)));
  }
}

export const SLICE_PATH = '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/app-1';
export const HOST = 'app.bench.local';

/** sliceEndpoints is the `endpoints` field of the slice for these pods. */
export const sliceEndpoints = (pods: readonly (readonly [string, EndpointState])[]) =>
  pods.map(([ip, state]) => ({
    addresses: [ip],
    conditions: state === 'ready' ? { ready: true } : { ready: false, serving: true, terminating: true },
  }));

/** appObjects: the Service `app`, its slice with `ready` pods on `port`, and an Ingress for HOST. */
export function appObjects(port: number, ready: readonly string[]): object[] {
  return [
    ingressClass(),
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'app', namespace: 'default' },
      spec: { ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
    },
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'app-1', namespace: 'default', labels: { 'kubernetes.io/service-name': 'app' } },
      addressType: 'IPv4',
      ports: [{ name: 'http', port, protocol: 'TCP' }],
      endpoints: sliceEndpoints(ready.map((ip) => [ip, 'ready'] as const)),
    },
    ingress('app', { [HOST]: [{ path: '/', service: 'app' }] }),
  ];
}

/** Answer is one client request's outcome: the pod's name, or why it failed. */
export type Answer = { ok: true; pod: string } | { ok: false; reason: string };

/** ask sends one GET for HOST through nginx on `agent`'s connection. */
export function ask(port: number, agent: Agent | false): Promise<Answer> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/', headers: { host: HOST }, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () =>
        resolve(res.statusCode === 200 ? { ok: true, pod: body } : { ok: false, reason: `status=${res.statusCode}` }),
      );
      res.on('error', (e: NodeJS.ErrnoException) => resolve({ ok: false, reason: e.code ?? e.message }));
    });
    req.on('error', (e: NodeJS.ErrnoException) => resolve({ ok: false, reason: e.code ?? e.message }));
    req.end();
  });
}

/** LoadCounts tallies the clients' requests: failures by reason. */
export interface LoadCounts {
  ok: number;
  readonly failed: Map<string, number>;
}

/** keepAliveClients runs `n` clients, each sending one request after another on one keep-alive connection. */
export function keepAliveClients(
  port: number,
  n: number,
  pods: Pods,
): { counts: LoadCounts; stop: () => Promise<void> } {
  const counts: LoadCounts = { ok: 0, failed: new Map() };
  let stopping = false;
  const client = async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    while (!stopping) {
      const answer = await ask(port, agent);
      if (answer.ok) {
        counts.ok++;
        pods.answered.add(answer.pod);
      } else counts.failed.set(answer.reason, (counts.failed.get(answer.reason) ?? 0) + 1);
    }
    agent.destroy();
  };
  const running = Promise.all(Array.from({ length: n }, client));
  return {
    counts,
    stop: async () => {
      stopping = true;
      await running;
    },
  };
}

/** failures prints a tally: `3(ECONNRESET=2,status=502=1)`, or `0`. */
export function failures(counts: LoadCounts): string {
  const total = [...counts.failed.values()].reduce((a, b) => a + b, 0);
  return total === 0 ? '0' : `${total}(${[...counts.failed].map(([r, k]) => `${r}=${k}`).join(',')})`;
}
