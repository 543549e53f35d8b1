/**
 * The HTTP server on `--healthz-port`: `/healthz` (200 `ok`, or 500 with one reason per line;
 * then `warning:` lines; details only to loopback clients), `/metrics` (Prometheus text), and the status page
 * (`/`, `/status.json` and its assets: src/http/status-page.ts) unless `--status-page=off`. Anything else is 404. It
 * runs as the root supervisor's
 * `http` child: a fromPromise that resolves when stopped and rejects when the server fails.
 */
import { createServer, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fromPromise } from 'xstate';
import type { Logger } from '../log.js';
import { listenOn } from './listen.js';
import { checkHealth, healthText, isLoopbackAddress, type Health } from './health.js';
import type { ControllerMetrics } from './metrics.js';
import { observeSystem } from './observed.js';
import { serveStatusPage, STATUS_PATHS, type StatusPageMode } from './status-page.js';
import { buildStatusReport, type ControllerInfo, type StatusReport } from './status-report.js';

/** HttpServerOptions are the port and what the two endpoints read. */
export interface HttpServerOptions {
  readonly port: number;
  /** listen address; all interfaces by default (the kubelet probes the pod IP) */
  readonly host?: string;
  readonly health: () => Health;
  readonly metrics: ControllerMetrics;
  readonly log: Logger;
  /** the status page: who may see it, and the report; absent, its paths are 404 */
  readonly statusPage?: { readonly mode: StatusPageMode; readonly report: () => StatusReport };
}

/** createHttpServer makes the (not yet listening) server for /healthz and /metrics. */
export function createHttpServer(options: HttpServerOptions): Server {
  return createServer(httpHandler(options));
}

/** httpHandler answers /healthz, /metrics and the status page. */
function httpHandler(options: Omit<HttpServerOptions, 'port' | 'host'>): RequestListener {
  return (req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/healthz') {
      const health = options.health();
      res.writeHead(health.ok ? 200 : 500, {
        'content-type': 'text/plain; charset=utf-8',
        'cache-control': 'no-store',
      });
      res.end(healthText(health, isLoopbackAddress(req.socket.remoteAddress)));
      if (!health.ok) options.log.debug({ problems: health.problems.map((p) => p.detailed) }, '/healthz is failing');
      return;
    }
    if (path === '/metrics') {
      void writeMetrics(res, options.metrics);
      return;
    }
    if (options.statusPage && STATUS_PATHS.has(path)) {
      serveStatusPage(req, res, path, options.statusPage.mode, options.statusPage.report);
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
  };
}

/**
 * writeMetrics writes /metrics a slice at a time, waiting for the client to take each (so a slow reader holds one
 * slice, not the whole text) and letting /healthz be answered in between.
 */
async function writeMetrics(res: ServerResponse, metrics: ControllerMetrics): Promise<void> {
  const slices = metrics.text();
  let started = false;
  try {
    for await (const slice of slices) {
      if (!started) res.writeHead(200, { 'content-type': metrics.registry.contentType });
      started = true;
      if (res.destroyed) return;
      if (!res.write(slice)) await drained(res);
    }
    if (!started) res.writeHead(200, { 'content-type': metrics.registry.contentType });
    res.end();
  } catch (error) {
    if (started) res.destroy(error as Error);
    else res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(`${(error as Error).message}\n`);
  }
}

/** drained resolves when the response takes more, or is closed. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * listenHealthz binds the `--healthz-port` before the controller starts, so that a port in use
 * stops the start with a ListenError naming the flag (exit 1) rather than leaving a controller
 * without probes. It answers 500 ("starting") until httpActor takes it.
 */
export async function listenHealthz(port: number, host?: string): Promise<Server> {
  // Until httpActor takes it (once boot's config check passed), a probe hears that it is starting:
  // a request with no listener at all would never be answered.
  const server = createServer((_req, res) => {
    res
      .writeHead(500, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' })
      .end('starting: the boot config is being checked\n');
  });
  await listenOn(server, { port, ...(host === undefined ? {} : { host }), flag: '--healthz-port' });
  return server;
}

/** HttpActorOptions are HttpServerOptions without what the actor builds from its system (health, the report). */
export interface HttpActorOptions extends Omit<HttpServerOptions, 'health' | 'statusPage'> {
  readonly watchers: readonly string[];
  /** the server listenHealthz bound at start: the first run serves on it, a restart listens anew */
  readonly listening?: Server;
  /** the status page (`--status-page`), what it says about the controller, and the actors it lists after root */
  readonly statusPage?: {
    readonly mode: StatusPageMode;
    readonly info: ControllerInfo;
    readonly actorIds: readonly string[];
  };
}

/**
 * httpActor is the `http` child: it listens until stopped (its AbortSignal), then closes every
 * connection. At start it serves on the server listenHealthz bound (a port in use there stopped
 * the start). A restart whose port is taken meanwhile tries again every second (a probe port
 * taken must not take the running data plane down with it); any other server error rejects, and
 * the supervisor restarts it.
 */
export function httpActor(options: HttpActorOptions) {
  let prebound = options.listening;
  return fromPromise<void, void>(({ system, signal }) => {
    const actors = observeSystem(system);
    const health = () => checkHealth(actors, options.watchers);
    const page = options.statusPage;
    const statusPage = page && {
      mode: page.mode,
      report: () =>
        buildStatusReport({ actors, actorIds: page.actorIds, info: page.info, health: health(), now: Date.now() }),
    };
    const { statusPage: _, ...rest } = options;
    const handler = httpHandler({ ...rest, health, ...(statusPage ? { statusPage } : {}) });
    const server = prebound ?? createServer();
    const bound = prebound !== undefined;
    prebound = undefined;
    server.removeAllListeners('request');
    server.on('request', handler);
    return new Promise<void>((resolve, reject) => {
      let retry: NodeJS.Timeout | undefined;
      const listen = () => server.listen(options.port, options.host);
      const close = () => {
        clearTimeout(retry);
        server.close(() => resolve());
        server.closeAllConnections();
      };
      server.on('listening', () =>
        options.log.info({ port: (server.address() as AddressInfo).port }, 'serving /healthz and /metrics'),
      );
      server.on('error', (error: NodeJS.ErrnoException) => {
        if (signal.aborted) return;
        if (error.code === 'EADDRINUSE') {
          options.log.warn({ port: options.port }, 'the healthz port is in use; trying again in 1 s');
          retry = setTimeout(listen, 1_000);
          return;
        }
        signal.removeEventListener('abort', close);
        server.close();
        reject(error);
      });
      signal.addEventListener('abort', close, { once: true });
      if (signal.aborted) close();
      else if (bound)
        options.log.info({ port: (server.address() as AddressInfo).port }, 'serving /healthz and /metrics');
      else listen();
    });
  });
}
