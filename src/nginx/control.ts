import { randomBytes } from 'node:crypto';
import type { RefusedEntry } from '../../machines/events.js';
import { request } from 'node:http';
import {
  backendEntries,
  certificateEntries,
  ingressEntries,
  type KeyedEntries,
  keyedBody,
} from '../model/dynamic-tables.js';
import type { BackendTable, CertificateTable, IngressRouteTable, RouteTable } from '../model/pushed-tables.js';

/** CONTROL_SOCKET is the control channel's unix socket, relative to the config folder (private to the controller). */
export const CONTROL_SOCKET = 'control.sock';

/** CONTROL_TOKEN_ENV is the environment variable the nginx master gets the per-start token in (never on disk). */
export const CONTROL_TOKEN_ENV = 'INGRESS_ACTORS_CONTROL_TOKEN';

/** CONTROL_TOKEN_HEADER carries the token on every control request. */
export const CONTROL_TOKEN_HEADER = 'x-ingress-actors-token';

/** ControlStatus is what `GET /status` reports: the version of each table nginx holds, null before the first push. */
export interface ControlStatus {
  readonly backends: string | null;
  readonly certificates: string | null;
  readonly routes: string | null;
  /** the Ingress route table's (POST /ingress-routes, host by host) */
  readonly ingress_routes: string | null;
}

/**
 * ControlError is a control request nginx refused or that did not complete: `status` is nginx's answer (0 when none
 * came: no socket, timeout, connection reset) and the message carries nginx's one-line reason.
 */
export class ControlError extends Error {
  override name = 'ControlError';
  constructor(
    message: string,
    readonly status: number,
    readonly reason: string,
  ) {
    super(message);
  }
}

export type { RefusedEntry };

/** PushAnswer is what a push resolves to: the version nginx now holds, and the entries it refused. */
export interface PushAnswer {
  readonly version: string;
  readonly refused: readonly RefusedEntry[];
}

/** newControlToken makes a per-start control token: 32 random bytes as 64 hex characters. */
export function newControlToken(): string {
  return randomBytes(32).toString('hex');
}

/** DEFAULT_TIMEOUT_MS bounds a control request from sending it to the last byte of the answer. */
const DEFAULT_TIMEOUT_MS = 5_000;

/** ControlChannel talks to nginx's Lua control server over its unix socket (lua/ingress_actors/control.lua). */
export class ControlChannel {
  constructor(
    private readonly socketPath: string,
    private readonly token: string,
    private readonly timeoutMs = DEFAULT_TIMEOUT_MS,
  ) {}

  /**
   * pushBackends makes nginx's backend table `table`: the Backends that differ from `held` (the table nginx holds), or
   * all of them when nginx holds none or another; what it holds now and the entries it refused (they keep what they
   * had).
   */
  async pushBackends(table: BackendTable, held: BackendTable | null = null): Promise<PushAnswer> {
    return this.pushKeyed('/backends', backendEntries(table), held && backendEntries(held));
  }

  /** pushCertificates makes nginx's certificate table `table`, as pushBackends does: one entry per Secret. */
  async pushCertificates(table: CertificateTable, held: CertificateTable | null = null): Promise<PushAnswer> {
    return this.pushKeyed('/certificates', certificateEntries(table), held && certificateEntries(held));
  }

  /** pushRoutes replaces nginx's Gateway API route table, entry by entry: what it holds now and what it refused. */
  async pushRoutes(table: RouteTable): Promise<PushAnswer> {
    return this.push('/routes', table);
  }

  /** pushIngressRoutes makes nginx's Ingress route table (the shared server's) `table`, as pushBackends does. */
  async pushIngressRoutes(table: IngressRouteTable, held: IngressRouteTable | null = null): Promise<PushAnswer> {
    return this.pushKeyed('/ingress-routes', ingressEntries(table), held && ingressEntries(held));
  }

  /** status asks nginx which table versions it holds. */
  async status(): Promise<ControlStatus> {
    const { status, body } = await this.send('GET', '/status');
    if (status !== 200) throw refused('GET /status', status, body);
    return JSON.parse(body) as ControlStatus;
  }

  /**
   * drainMetrics takes the request-metric deltas nginx's workers handed over (lua/ingress_actors/monitor.lua): a first
   * line `left N dropped N`, then a line per label set. What it returns is gone from nginx.
   */
  async drainMetrics(): Promise<string> {
    const { status, body } = await this.send('GET', '/metrics');
    if (status !== 200) throw refused('GET /metrics', status, body);
    return body;
  }

  /**
   * drainSpans takes the spans nginx's workers handed over (lua/ingress_actors/tracing.lua): a first line
   * `left N dropped N`, then a line per span (bytes: src/http/span-lines.ts copies them). What it returns is gone from
   * nginx.
   */
  async drainSpans(): Promise<Buffer[]> {
    const { status, chunks } = await this.exchange('GET', '/spans');
    if (status !== 200) throw refused('GET /spans', status, Buffer.concat(chunks).toString());
    return chunks;
  }

  private async push(path: string, table: RouteTable): Promise<PushAnswer> {
    return this.pushText(path, JSON.stringify(table));
  }

  /** pushKeyed sends a delta on `held`, or the whole table when nginx holds none or another version than `held`. */
  private async pushKeyed(path: string, next: KeyedEntries, held: KeyedEntries | null): Promise<PushAnswer> {
    try {
      return await this.pushText(path, keyedBody(next, held));
    } catch (error) {
      // nginx holds another version than the delta's base (a push it took without answering, a reload's union it
      // refused part of): the whole table then
      if (held === null || (error as { status?: unknown }).status !== 409) throw error;
      return this.pushText(path, keyedBody(next, null));
    }
  }

  private async pushText(path: string, text: string): Promise<PushAnswer> {
    const { status, body } = await this.send('POST', path, text);
    if (status !== 201) throw refused(`POST ${path}`, status, body);
    const answer = JSON.parse(body) as { version: string; refused?: unknown };
    const entries = Array.isArray(answer.refused) ? (answer.refused as RefusedEntry[]) : [];
    return { version: answer.version, refused: entries };
  }

  /** send makes one request; the body is a string so Content-Length is known and nginx buffers it in memory. */
  private async send(method: string, path: string, body?: string): Promise<{ status: number; body: string }> {
    const answer = await this.exchange(method, path, body);
    return { status: answer.status, body: Buffer.concat(answer.chunks).toString() };
  }

  /** exchange makes one request; its answer's body as read (no copy of it all: spans come by megabytes) */
  private exchange(method: string, path: string, body?: string): Promise<{ status: number; chunks: Buffer[] }> {
    const payload = body === undefined ? undefined : Buffer.from(body);
    return new Promise((resolve, reject) => {
      const req = request(
        {
          socketPath: this.socketPath,
          method,
          path,
          agent: false,
          headers: {
            host: 'localhost',
            [CONTROL_TOKEN_HEADER]: this.token,
            ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, chunks }));
          res.on('error', reject);
        },
      );
      req.setTimeout(this.timeoutMs, () =>
        req.destroy(new ControlError(`${method} ${path}: no answer within ${this.timeoutMs} ms`, 0, 'timeout')),
      );
      req.on('error', (err) =>
        reject(
          err instanceof ControlError ? err : new ControlError(`${method} ${path}: ${err.message}`, 0, err.message),
        ),
      );
      req.end(payload);
    });
  }
}

/** refused is the ControlError of an answer that was not the expected one, with nginx's first line. */
function refused(what: string, status: number, body: string): ControlError {
  const reason = (body.split('\n').find((line) => line.trim() !== '') ?? '').trim().slice(0, 300);
  return new ControlError(`${what}: nginx answered ${status}${reason ? `: ${reason}` : ''}`, status, reason);
}
