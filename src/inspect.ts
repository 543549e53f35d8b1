/**
 * `--inspect`: the running controller in the Stately inspector. The controller's actors report to
 * @statelyai/inspect's Node WebSocket inspector (createWebSocketInspector), which sends every
 * actor, snapshot and event to a relay served here on loopback; a browser opens the relay's page,
 * which embeds https://stately.ai/inspect and forwards the events to it.
 *
 * The relay plays the part of the package's createInspectorServer, with five differences a
 * long-running controller needs: it listens on 127.0.0.1 only (actor contexts hold nginx.conf),
 * it refuses WebSocket upgrades from web pages other than its own (any page the operator's browser
 * opens could otherwise connect to ws://127.0.0.1 and read the live config), it never opens a
 * browser, a client that connects late first gets every live actor and its latest snapshot,
 * then the recent history, instead of only the last 200 messages, and an actor invoked anew each
 * time (a Lease renewal, a sync run) is shown as one actor, not one more per call (ActorSlots).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createWebSocketInspector } from '@statelyai/inspect';
import { WebSocket, WebSocketServer } from 'ws';
import type { InspectionEvent } from 'xstate';
import { listenOn } from './http/listen.js';

/** InspectorOptions say where the relay listens and how much it remembers for late clients. */
export interface InspectorOptions {
  /** 0 picks a free port */
  readonly port: number;
  readonly host?: string;
  /** recent messages replayed to a client that connects later (default 1000) */
  readonly history?: number;
  /** strings in actor contexts longer than this are cut for the inspector (default 4096) */
  readonly maxStringLength?: number;
  /** Origins allowed beside the relay's own page (`http://127.0.0.1:<port>`, `http://localhost:<port>`); exact match */
  readonly allowedOrigins?: readonly string[];
  /** the flag a listen failure names (default `--inspect-port`) */
  readonly flag?: string;
}

/** Inspector is a listening relay plus the xstate inspect callback that feeds it. */
export interface Inspector {
  /** the page to open in a browser: `http://127.0.0.1:8080/` */
  readonly url: string;
  /** the relay's WebSocket address: inspector clients send here, viewers receive from here */
  readonly wsUrl: string;
  /** pass to createActor / startController as `inspect` */
  readonly inspect: (event: InspectionEvent) => void;
  /** resolves once the controller's own inspector client is connected to the relay */
  readonly connected: Promise<void>;
  close(): Promise<void>;
}

/** StatelyMessage is the part of a relayed @statelyai/inspect message the relay looks at. */
interface StatelyMessage {
  readonly type: string;
  sessionId?: string;
  /** @xstate.actor: the parent's sessionId, and the actor's id (the root's: its machine's) */
  parentId?: string;
  readonly name?: string;
  /** @xstate.event: the sender's sessionId */
  sourceId?: string;
  readonly snapshot?: { readonly status?: string };
}

const STATELY_UI = 'https://stately.ai/inspect';

// The bridge page of @statelyai/inspect's server, addressing the relay by the page's own host so
// it also works through `kubectl port-forward` and SSH tunnels.
const BRIDGE_PAGE =
  `<!DOCTYPE html>
<html>
<head><meta charset="utf-8"><title>ingress-actors · Stately inspector</title>
<style>* { margin: 0; padding: 0; } html, body { height: ` +
  `100%; } iframe { width: 100%; height: 100%; border: none; }</style>
</head>
<body>
<iframe id="inspector" src="${STATELY_UI}"></iframe>
<script>
  const iframe = document.getElementById('inspector');
  const buffer = [];
  let connected = false;
  window.addEventListener('message', (e) => {
    if (e.data && e.data.type === '@statelyai.connected') {
      connected = true;
      for (const event of buffer.splice(0)) iframe.contentWindow.postMessage(event, '*');
    }
  });
  const ws = new WebSocket('ws://' + location.host);
  ws.onmessage = (event) => {
    const data = JSON.parse(event.data);
    if (connected) iframe.contentWindow.postMessage(data, '*');
    else buffer.push(data);
  };
</script>
</body>
</html>
`;

/**
 * ActorSlots folds the actors a viewer lists, one entry per place an actor has: the Stately
 * inspector lists actors by sessionId, and xstate gives every invocation a new one, so each Lease
 * renewal, each sync run, each reload and each restarted child would pile up as another actor.
 * An actor is shown under the sessionId of the first one that had its id under the same (shown)
 * parent; xstate keeps a parent's children's ids unique, so two live actors never share an entry.
 * A root keeps its own sessionId. Only the latest instance of each entry is remembered.
 */
class ActorSlots {
  private readonly shownAs = new Map<string, string>();
  private readonly slots = new Map<string, { readonly shown: string; latest: string }>();

  /** fold rewrites a message's sessionIds to the ones shown. */
  fold(message: StatelyMessage): void {
    if (message.type === '@xstate.actor' && message.sessionId && message.parentId) {
      const parent = this.shown(message.parentId);
      const key = `${parent}\u0000${message.name ?? message.sessionId}`;
      const slot = this.slots.get(key);
      if (slot) {
        this.shownAs.delete(slot.latest);
        slot.latest = message.sessionId;
      } else this.slots.set(key, { shown: message.sessionId, latest: message.sessionId });
      this.shownAs.set(message.sessionId, slot?.shown ?? message.sessionId);
      message.parentId = parent;
    }
    if (message.sessionId) message.sessionId = this.shown(message.sessionId);
    if (message.sourceId) message.sourceId = this.shown(message.sourceId);
  }

  private shown(sessionId: string): string {
    return this.shownAs.get(sessionId) ?? sessionId;
  }
}

/** Replay remembers what a late viewer needs: live actors in creation order, their latest snapshots, recent history. */
class Replay {
  private readonly actors = new Map<string, string>();
  private readonly snapshots = new Map<string, string>();
  private readonly recent: string[] = [];
  constructor(private readonly size: number) {}

  record(raw: string, message: StatelyMessage): void {
    this.recent.push(raw);
    if (this.recent.length > this.size) this.recent.shift();
    const id = message.sessionId;
    if (!id) return;
    if (message.type === '@xstate.actor') this.actors.set(id, raw);
    if (message.type === '@xstate.snapshot') {
      // A finished actor stays in the history but is not replayed for ever: invocations come and go.
      if (message.snapshot?.status && message.snapshot.status !== 'active') {
        this.actors.delete(id);
        this.snapshots.delete(id);
      } else this.snapshots.set(id, raw);
    }
  }

  messages(): string[] {
    const recent = new Set(this.recent);
    const older = [...this.actors.values(), ...this.snapshots.values()].filter((raw) => !recent.has(raw));
    return [...older, ...this.recent];
  }
}

const LOOPBACK_NAMES = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * originAllowed decides whether a WebSocket upgrade may connect. Browsers always send Origin on a
 * WebSocket, so a request without one is not a web page (the controller's own inspector client,
 * a CLI viewer on this machine). A browser may connect from the relay's own page only: an Origin
 * `http://<loopback name>:<port>` equal to the Host it asked for (which is also how it looks
 * through `kubectl port-forward 9000:8080`), or one listed in `allowed`. Anything else is another
 * site's page, or a DNS-rebinding one whose Host is not a loopback name.
 */
export function originAllowed(
  origin: string | undefined,
  host: string | undefined,
  allowed: readonly string[] = [],
): boolean {
  if (origin === undefined) return true;
  if (allowed.includes(origin)) return true;
  if (host === undefined || origin !== `http://${host.toLowerCase()}`) return false;
  const name = host.toLowerCase().replace(/:\d{1,5}$/, '');
  return LOOPBACK_NAMES.has(name);
}

function truncateStrings(value: unknown, max: number, depth = 0): unknown {
  if (typeof value === 'string')
    return value.length > max ? `${value.slice(0, max)}… (${value.length} characters)` : value;
  if (depth > 8 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => truncateStrings(item, max, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, truncateStrings(item, max, depth + 1)]));
}

/**
 * startInspector starts the relay on `host:port` (127.0.0.1 by default) and connects a
 * @statelyai/inspect WebSocket inspector to it. Every message from one client goes to all the
 * others; the controller is one client, each browser page another.
 */
export async function startInspector(options: InspectorOptions): Promise<Inspector> {
  const host = options.host ?? '127.0.0.1';
  const replay = new Replay(options.history ?? 1000);
  const slots = new ActorSlots();
  const server: Server = createServer((req, res) => {
    if (req.url !== '/' && req.url !== '/index.html') return void res.writeHead(404).end('not found\n');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(BRIDGE_PAGE);
  });
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req: IncomingMessage, socket, head) => {
    if (!originAllowed(req.headers.origin, req.headers.host, options.allowedOrigins)) {
      socket.end('HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
  });
  wss.on('connection', (ws) => {
    for (const raw of replay.messages()) ws.send(raw);
    ws.on('message', (data) => {
      let message: StatelyMessage;
      try {
        message = JSON.parse(data.toString()) as StatelyMessage;
      } catch {
        return; // not an inspection event: nothing to relay
      }
      slots.fold(message);
      const raw = JSON.stringify(message);
      replay.record(raw, message);
      for (const client of wss.clients) if (client !== ws && client.readyState === WebSocket.OPEN) client.send(raw);
    });
  });
  // A port in use is a ListenError naming the flag (the CLI prints one line), not a raw EADDRINUSE.
  await listenOn(server, { port: options.port, host, flag: options.flag ?? '--inspect-port' });
  const { port } = server.address() as AddressInfo;
  const where = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  const wsUrl = `ws://${where}`;
  const maxString = options.maxStringLength ?? 4096;
  const connected = new Promise<void>((resolve) => wss.once('connection', () => resolve()));
  const inspector = createWebSocketInspector({
    url: wsUrl,
    // Events before the socket opens are kept, so the boot is not lost.
    maxDeferredEvents: 10_000,
    sanitizeContext: (context) => truncateStrings(context, maxString) as typeof context,
  });
  return {
    url: `http://${where}/`,
    wsUrl,
    inspect: (event) => inspector.inspect.next?.(event),
    connected,
    close: async () => {
      inspector.stop();
      for (const client of wss.clients) client.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
