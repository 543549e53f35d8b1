/**
 * Watches: a chunked stream of JSON lines `{"type":…,"object":…}` per request, as kube-apiserver
 * sends them. A watch replays the history newer than its resourceVersion, then follows the store;
 * a version older than the history window gets an ERROR event carrying a 410 Status (what the
 * real watch cache does) and the stream ends. Selector-filtered watches see an object that stops
 * matching as DELETED and one that starts matching as ADDED, like the real server.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { flag, sendError } from './http.js';
import type { Registry } from './registry.js';
import { apiVersionOf, builtinKind, storageOf, type ResourceDef } from './resources.js';
import { parseFieldSelector, parseLabelSelector, type Selector } from './selectors.js';
import { badRequest, gone } from './status.js';
import { GoneError, inVersion, type StoreEvent } from './store.js';
import type { KubeObject } from './objects.js';
import { toTable, type RowObject } from './table.js';

/** WatchSettings tune watches server-wide; tests may change them while the server runs. */
export interface WatchSettings {
  /** How often a watch that allows bookmarks gets one. */
  bookmarkIntervalMs: number;
  /**
   * How a too-old resourceVersion is refused: `event` (an ERROR event in a 200 stream, as the
   * real watch cache does) or `http` (a plain 410 response, as an uncached watch can).
   */
  goneAs: 'event' | 'http';
}

/** WatchRequest is what the router found out about a watch request. */
export interface WatchRequest {
  readonly resource: ResourceDef;
  readonly namespace: string | undefined;
  readonly query: URLSearchParams;
  readonly table: boolean;
}

interface OpenWatch {
  readonly res: ServerResponse;
  readonly resource: ResourceDef;
  stop(): void;
}

type WireEvent = { type: string; object: unknown };

/** The real server's --min-request-timeout: watches without timeoutSeconds end after 30–60 minutes. */
const MIN_REQUEST_TIMEOUT_S = 1800;

/** Node timers overflow past 2^31-1 ms; a longer timeoutSeconds is served as this. */
const MAX_TIMER_S = 2_147_483;

/**
 * watchLine is one watch event as a line of JSON, with U+2028 and U+2029 escaped as Go's
 * encoding/json (and so kube-apiserver) always does. JSON.stringify leaves them raw, and line
 * readers such as Node's readline (which client-node's Watch uses) end a line there, so an
 * object holding one would arrive as two unparsable halves, and client-node drops both silently.
 */
export function watchLine(event: unknown): string {
  return JSON.stringify(event).replace(/[\u2028\u2029]/g, (c) => (c === '\u2028' ? '\\u2028' : '\\u2029'));
}

/** Watches serves watch requests and keeps track of the open ones so they can be dropped. */
export class Watches {
  private readonly open = new Set<OpenWatch>();

  constructor(
    private readonly registry: Registry,
    readonly settings: WatchSettings,
  ) {
    // A deleted CRD's watches end, as its handler goes away in kube-apiserver; clients then find it gone.
    registry.resources.onRemoved((removed) => {
      for (const watch of [...this.open]) {
        if (!removed.includes(watch.resource)) continue;
        watch.stop();
        watch.res.end();
      }
    });
  }

  /** count is the number of watch streams currently open. */
  get count(): number {
    return this.open.size;
  }

  /**
   * drop closes every open watch: by ending the stream (as an API server restart or a watch
   * timeout does), or with `abrupt` by destroying the connection (as a network fault does).
   * Returns how many were closed.
   */
  drop(options: { abrupt?: boolean } = {}): number {
    const watches = [...this.open];
    for (const watch of watches) {
      watch.stop();
      if (options.abrupt) watch.res.socket?.destroy();
      else watch.res.end();
    }
    return watches.length;
  }

  /** serve answers one watch request, streaming until it times out, is dropped or the client leaves. */
  serve(req: IncomingMessage, res: ServerResponse, request: WatchRequest): void {
    const { resource, namespace, query } = request;
    const store = this.registry.store;
    const labels = parseLabelSelector(query.get('labelSelector'));
    const fields = parseFieldSelector(query.get('fieldSelector'), builtinKind(resource));
    const inScope: Selector = (o) => (!namespace || o.metadata.namespace === namespace) && labels(o) && fields(o);
    const rvParam = query.get('resourceVersion') ?? '';
    const from = rvParam === '' || rvParam === '0' ? undefined : Number(rvParam);
    if (from !== undefined && !Number.isInteger(from)) {
      sendError(res, badRequest(`invalid resource version: ${rvParam}`));
      return;
    }
    const bookmarks = flag(query, 'allowWatchBookmarks');
    const initialParam = query.get('sendInitialEvents');
    const sendInitial = initialParam === null ? from === undefined : flag(query, 'sendInitialEvents');
    const timeoutParam = Number(query.get('timeoutSeconds') ?? NaN);
    const timeoutS = Math.min(
      Number.isFinite(timeoutParam) && timeoutParam > 0 ? timeoutParam : MIN_REQUEST_TIMEOUT_S * (1 + Math.random()),
      MAX_TIMER_S,
    );

    let replay: StoreEvent[] = [];
    let expired: GoneError | undefined;
    try {
      if (from !== undefined && !sendInitial) replay = store.eventsSince(from);
    } catch (error) {
      if (!(error instanceof GoneError)) throw error;
      expired = error;
    }
    if (expired && this.settings.goneAs === 'http') {
      sendError(res, gone(expired.message));
      return;
    }

    let headers = true;
    const encode = (type: string, object: KubeObject): WireEvent => {
      if (!request.table || type === 'BOOKMARK' || type === 'ERROR') return { type, object };
      const include = (query.get('includeObject') ?? 'PartialObjectMetadata') as RowObject;
      const table = toTable(resource, [object], {
        include,
        headers,
        metadata: { resourceVersion: object.metadata.resourceVersion ?? '' },
      });
      // Column definitions come with the first event only, as from kube-apiserver.
      headers = false;
      return { type, object: table };
    };
    const write = (event: WireEvent): void => {
      res.write(`${watchLine(event)}\n`);
    };
    const send = (type: string, object: KubeObject): void => write(encode(type, object));
    const bookmark = (annotations?: Record<string, string>): void => {
      const metadata: Record<string, unknown> = { resourceVersion: String(store.resourceVersion) };
      if (annotations) metadata.annotations = annotations;
      write({ type: 'BOOKMARK', object: { kind: resource.kind, apiVersion: apiVersionOf(resource), metadata } });
    };
    const deliver = (event: StoreEvent): void => {
      if (storageOf(event.resource) !== storageOf(resource)) return;
      const object = resource.crd ? inVersion(resource, structuredClone(event.object)) : event.object;
      const now = inScope(object);
      if (event.type === 'MODIFIED') {
        const before = event.previous ? inScope(event.previous) : false;
        if (now && before) send('MODIFIED', object);
        else if (now) send('ADDED', object);
        else if (before) send('DELETED', object);
      } else if (now) {
        send(event.type, object);
      }
    };

    res.writeHead(200, {
      'Content-Type': 'application/json',
      'Cache-Control': 'no-cache, private',
      'Transfer-Encoding': 'chunked',
    });
    // Send the headers now: clients (client-node's fetch) wait for them before reading events.
    res.flushHeaders();
    if (expired) {
      write({ type: 'ERROR', object: gone(expired.message).toStatus() });
      res.end();
      return;
    }

    let unsubscribe = (): void => {};
    const timers: NodeJS.Timeout[] = [];
    const watch: OpenWatch = {
      res,
      resource,
      stop: () => {
        unsubscribe();
        for (const timer of timers) clearTimeout(timer);
        this.open.delete(watch);
      },
    };
    // Replay and subscription happen in one synchronous step, so no change falls between them.
    if (sendInitial) {
      for (const object of this.registry.list(resource, { namespace }).items)
        if (inScope(object)) send('ADDED', object);
      if (bookmarks && initialParam !== null) bookmark({ 'k8s.io/initial-events-end': 'true' });
    }
    for (const event of replay) deliver(event);
    // A failure while encoding one event ends this stream only, never the write that caused it.
    unsubscribe = store.subscribe((event) => {
      try {
        deliver(event);
      } catch {
        watch.stop();
        res.destroy();
      }
    });
    this.open.add(watch);
    timers.push(
      setTimeout(() => {
        watch.stop();
        res.end();
      }, timeoutS * 1000),
    );
    if (bookmarks) timers.push(setInterval(() => bookmark(), this.settings.bookmarkIntervalMs));
    req.on('close', () => watch.stop());
    res.on('close', () => watch.stop());
    res.on('error', () => watch.stop());
  }
}
