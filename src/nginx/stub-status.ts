/**
 * nginx's stub_status, read by /metrics at scrape time over the unix socket the template gives it (`statusSocket`, in
 * the controller's private config folder: never a public port). ingress-nginx reads the same page for its
 * `nginx_ingress_controller_nginx_process_connections*` and `_requests_total`.
 */
import { request } from 'node:http';
import { join, resolve } from 'node:path';

/** StubStatus is one stub_status page: three counters since the master started, and four current counts. */
export interface StubStatus {
  readonly active: number;
  readonly accepted: number;
  readonly handled: number;
  readonly requests: number;
  readonly reading: number;
  readonly writing: number;
  readonly waiting: number;
}

// The page nginx 1.x writes (ngx_http_stub_status_module.c), exactly: anything else is not a stub_status page.
const PAGE =
  /^Active connections: (\d+) \r?\nserver accepts handled requests\r?\n (\d+) (\d+) (\d+) \r?\nReading: (\d+) Writing: (\d+) Waiting: (\d+) \r?\n?$/;

/** parseStubStatus reads a stub_status page; null when the text is not one. */
export function parseStubStatus(text: string): StubStatus | null {
  const m = PAGE.exec(text);
  if (!m) return null;
  const [active, accepted, handled, requests, reading, writing, waiting] = m.slice(1).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  return { active, accepted, handled, requests, reading, writing, waiting };
}

/** STATUS_SOCKET is the stub_status socket, relative to the config folder (private to the controller). */
export const STATUS_SOCKET = 'nginx-status.sock';

/** A unix socket path longer than this does not fit sockaddr_un on Linux (108 bytes with the NUL). */
const MAX_SOCKET_PATH = 107;

/** statusSocketIn is the stub_status socket's absolute path in `configDir`; null when it is too long to bind. */
export function statusSocketIn(configDir: string): string | null {
  const path = join(resolve(configDir), STATUS_SOCKET);
  return path.length > MAX_SOCKET_PATH ? null : path;
}

/** STUB_STATUS_PATH is the location the template serves stub_status at on the status socket. */
export const STUB_STATUS_PATH = '/nginx_status';

/** MAX_PAGE_BYTES: a stub_status page is about 120 bytes; more is not one. */
const MAX_PAGE_BYTES = 4096;

/**
 * readStubStatus GETs the page from the unix socket `socketPath`; null when nginx does not answer in `timeoutMs`
 * (not running, restarting), answers something else, or the socket is not there. It never throws: a scrape without
 * nginx still answers, without the nginx metrics.
 */
export function readStubStatus(socketPath: string, timeoutMs = 1_000): Promise<StubStatus | null> {
  return new Promise((resolve) => {
    const req = request(
      { socketPath, path: STUB_STATUS_PATH, method: 'GET', agent: false, headers: { host: 'localhost' } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
          if (body.length > MAX_PAGE_BYTES) req.destroy();
        });
        res.on('end', () => resolve(res.statusCode === 200 ? parseStubStatus(body) : null));
        // Cut short (too long, reset): resolves null unless 'end' came first.
        res.on('close', () => resolve(null));
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy());
    req.on('error', () => resolve(null));
    req.end();
  });
}
