/**
 * The parts of a rolling update on loopback: pods (HTTP servers on 127.0.0.x answering with their
 * address), the one EndpointSlice an endpoints controller would write for them, keep-alive clients
 * that never retry, and what nginx's Lua balancer holds and which workers serve.
 */
import { Agent, createServer, request, type RequestListener, type Server } from 'node:http';
import { liveGroupMembers } from '../../src/nginx/master.js';
import { startCluster, waitFor, type Cluster } from './cluster.js';
import { ingress, ingressClass } from './manifests.js';
import { freePort } from './net.js';

/** Pods are HTTP servers on loopback addresses; each answers `<ip>:<port>`. */
export class Pods {
  private readonly servers = new Map<string, Server>();

  /** start starts a pod that answers at once, or hands each request to `handle` (one that never answers, say). */
  async start(ip: string, port: number, handle?: RequestListener): Promise<void> {
    const server = createServer(handle ?? ((_req, res) => res.end(`${ip}:${port}`)));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, ip, resolve);
    });
    this.servers.set(`${ip}:${port}`, server);
  }

  /** stop is a graceful exit: no new connections, idle ones closed, requests in progress answered. */
  async stop(ip: string, port: number): Promise<void> {
    const server = this.take(ip, port);
    server.closeIdleConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** kill is a process killed: the listener and every open connection close at once, answered or not. */
  kill(ip: string, port: number): void {
    const server = this.take(ip, port);
    server.close();
    server.closeAllConnections();
  }

  async stopAll(): Promise<void> {
    for (const key of [...this.servers.keys()]) {
      const [ip, port] = key.split(':') as [string, string];
      await this.stop(ip, Number(port));
    }
  }

  private take(ip: string, port: number): Server {
    const server = this.servers.get(`${ip}:${port}`);
    if (!server) throw new Error(`no pod ${ip}:${port}`);
    this.servers.delete(`${ip}:${port}`);
    return server;
  }
}

/** podAddress is the n-th pod's address, wrapping around 127.0.0.2–127.0.0.254. */
export const podAddress = (n: number): string => `127.0.0.${2 + (n % 253)}`;

/** Condition is an endpoint's state in the slice: ready, or serving while its pod terminates. */
export type Condition = 'ready' | 'terminating';

/**
 * SliceWriter owns one EndpointSlice of a Service and writes it one change at a time (the API server
 * refuses a replace based on a stale version), each write carrying the endpoints as they are then.
 */
export class SliceWriter {
  private readonly endpoints = new Map<string, Condition>();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly cluster: Pick<Cluster, 'apply'>,
    private readonly service: string,
    public port: number,
  ) {}

  /** seed records an endpoint without writing (for the slice a cluster starts with). */
  seed(ip: string, condition: Condition): void {
    this.endpoints.set(ip, condition);
  }

  set(ip: string, condition: Condition): Promise<void> {
    this.endpoints.set(ip, condition);
    return this.write();
  }

  delete(ip: string): Promise<void> {
    this.endpoints.delete(ip);
    return this.write();
  }

  /** manifest is the slice as it stands (also for seeding a cluster). */
  manifest(): object {
    return {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: `${this.service}-1`,
        namespace: 'default',
        labels: { 'kubernetes.io/service-name': this.service },
      },
      addressType: 'IPv4',
      ports: [{ name: 'http', port: this.port, protocol: 'TCP' }],
      endpoints: [...this.endpoints].map(([ip, c]) => ({
        addresses: [ip],
        conditions: c === 'ready' ? { ready: true } : { ready: false, serving: true, terminating: true },
      })),
    };
  }

  write(): Promise<void> {
    const done = this.queue.then(() => this.cluster.apply(this.manifest()));
    this.queue = done.catch(() => undefined);
    return done.then(() => undefined);
  }
}

/** service is a Service whose port 80 targets the pods' port (by number: a move changes it). */
export const service = (name: string, targetPort: number) => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: 'default' },
  spec: { ports: [{ name: 'http', port: 80, targetPort }] },
});

/** pushedPeers are the `ip:port` peers nginx's balancer holds for an upstream, as its last push answer said. */
export function pushedPeers(cluster: Cluster, upstream: string): string[] {
  const pushed = cluster.actor('nginx')?.context.pushed as
    | { backends?: { backends?: { name: string; endpoints: { address: string; port: number }[] }[] } }
    | null
    | undefined;
  const backend = pushed?.backends?.backends?.find((b) => b.name === upstream);
  return backend ? backend.endpoints.map((p) => `${p.address}:${p.port}`) : [];
}

/** nginxProcesses are the pids of nginx's master and workers: a reload forks new workers. */
export function nginxProcesses(cluster: Cluster): number[] {
  const master = cluster.actor('nginx')?.context.pid as number | null | undefined;
  return master ? liveGroupMembers(master).sort((a, b) => a - b) : [];
}

/** Failure is a request that did not get a 200 from a pod, with when it ran (performance.now()). */
export interface Failure {
  readonly started: number;
  readonly ended: number;
  readonly what: string;
}

/** LoadResult is what the clients saw: successes, failures, and the answers by pod. */
export interface LoadResult {
  ok: number;
  readonly failures: Failure[];
  /** requests answered, by `ip:port` of the pod that answered */
  readonly answeredBy: Map<string, number>;
}

/**
 * startLoad runs `clients` clients, each sending GETs one after another on one keep-alive connection to
 * nginx until stopped, never retrying; `stop` resolves once every client has finished its last request.
 */
export function startLoad(options: { port: number; host: string; clients: number }): { stop(): Promise<LoadResult> } {
  const result: LoadResult = { ok: 0, failures: [], answeredBy: new Map() };
  let stopped = false;
  const one = async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    while (!stopped) {
      const started = performance.now();
      const outcome = await new Promise<{ body: string } | { error: string }>((resolve) => {
        const req = request(
          { host: '127.0.0.1', port: options.port, path: '/', headers: { host: options.host }, agent },
          (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => (body += chunk));
            res.on('end', () => resolve(res.statusCode === 200 ? { body } : { error: `${res.statusCode} ${body}` }));
            res.on('error', (error) => resolve({ error: error.message }));
          },
        );
        req.setTimeout(10_000, () => req.destroy(new Error('no answer in 10 s')));
        req.on('error', (error) => resolve({ error: error.message }));
        req.end();
      });
      if ('body' in outcome) {
        result.ok++;
        result.answeredBy.set(outcome.body, (result.answeredBy.get(outcome.body) ?? 0) + 1);
      } else {
        result.failures.push({ started, ended: performance.now(), what: outcome.error.trim() });
        // A refused connection fails at once: a client that does not back off would only spin.
        await new Promise((r) => setTimeout(r, 5));
      }
    }
    agent.destroy();
  };
  const running = Promise.all(Array.from({ length: options.clients }, one));
  return {
    stop: async () => {
      stopped = true;
      await running;
      return result;
    },
  };
}

/** watchHealthz polls `/healthz` until stopped and collects every answer that was not 200. */
export function watchHealthz(port: number, pollMs = 10): { stop(): Promise<{ polls: number; bad: string[] }> } {
  let stopped = false;
  const bad: string[] = [];
  let polls = 0;
  const loop = (async () => {
    while (!stopped) {
      const answer = await healthz(port);
      polls++;
      if (answer.status !== 200) bad.push(`${answer.status} ${answer.body.trim()}`);
      await new Promise((r) => setTimeout(r, pollMs));
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      return { polls, bad };
    },
  };
}

/** healthz asks `/healthz` once (status 0 when nothing answered). */
export function healthz(port: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/healthz', agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.setTimeout(5_000, () => req.destroy(new Error('no answer in 5 s')));
    req.on('error', (error) => resolve({ status: 0, body: error.message }));
    req.end();
  });
}

/** Rollout is a Service's pods, its slice's one writer and the controller serving it at `host`. */
export interface Rollout {
  readonly cluster: Cluster;
  readonly slice: SliceWriter;
  readonly port: number;
}

/**
 * startRollout starts `replicas` pods of Service `name` on one free port, then the controller serving it at `host`
 * at its default --sync-rate-limit (0.3; startCluster's own 10 would hide a push that waits for the reload rate
 * token), and waits until nginx's balancer holds every pod.
 */
export async function startRollout(pods: Pods, name: string, host: string, replicas: number): Promise<Rollout> {
  const port = await freePort();
  let cluster: Cluster | undefined;
  const slice = new SliceWriter({ apply: (o) => cluster!.apply(o) }, name, port);
  for (let n = 0; n < replicas; n++) {
    await pods.start(podAddress(n), port);
    slice.seed(podAddress(n), 'ready');
  }
  // The access log in a file (the default is the controller's stdout): the abrupt roll counts nginx's retries in it.
  const settings = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { namespace: 'default', name: 'rollout-settings' },
    data: { 'access-log-path': 'logs/access.log' },
  };
  cluster = await startCluster(
    [
      ingressClass(),
      settings,
      service(name, port),
      slice.manifest(),
      ingress(name, { [host]: [{ path: '/', service: name }] }),
    ],
    ['--sync-rate-limit', '0.3', '--configmap', 'default/rollout-settings'],
  );
  const started = cluster;
  await waitFor('the tables pushed', () => pushedPeers(started, `default_${name}_80`).length === replicas, 15_000);
  return { cluster, slice, port };
}
