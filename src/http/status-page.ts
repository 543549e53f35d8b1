/**
 * The status page on `--healthz-port`: `/` (HTML), `/status.js`, `/status.css` (from web/status/) and
 * `/status.json` (src/http/status-report.ts). The page polls /status.json once a second and fills itself in with
 * textContent only: every Kubernetes string is attacker-controlled, and the CSP allows no inline script anyway.
 *
 * Who may see it (`--status-page`): the page names hosts, objects and nginx's errors, so by default only loopback
 * clients (`kubectl port-forward` arrives from loopback) whose Host names loopback (a page of another site that
 * rebinds its DNS name to 127.0.0.1 reaches the port from loopback too, but under its own name).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PROJECT_ROOT } from '../project-root.js';
import { isLoopbackAddress } from './health.js';
import type { StatusReport } from './status-report.js';

/** StatusPageMode is `--status-page`: who may read the page and /status.json. */
export type StatusPageMode = 'loopback' | 'all' | 'off';

/** STATUS_PAGE_MODES are the values `--status-page` takes. */
export const STATUS_PAGE_MODES: readonly StatusPageMode[] = ['loopback', 'all', 'off'];

/** STATUS_PATHS are the paths the status page answers. */
export const STATUS_PATHS: ReadonlySet<string> = new Set([
  '/',
  '/index.html',
  '/status.json',
  '/status.js',
  '/status.css',
]);

/** The folder the page's files are read from: beside templates/ and lua/, shipped with the package. */
export const STATUS_PAGE_FOLDER = join(PROJECT_ROOT, 'web', 'status');

/** CONTENT_SECURITY_POLICY allows the page's own script, style and /status.json, and nothing else. */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** FORBIDDEN_HINT is the 403's one line. */
export const FORBIDDEN_HINT =
  'the status page is for loopback clients: kubectl port-forward to the --healthz-port, or --status-page=all\n';

const LOOPBACK_HOST = /^(?:localhost|127(?:\.\d{1,3}){3}|\[::1\]|\[::ffff:127(?:\.\d{1,3}){3}\])(?::\d{1,5})?$/i;

/**
 * statusAccess decides a request for the status page: `serve` it, `forbidden` (403 and a hint), or `off` (404, as
 * if there were no page). With `loopback`, the client must be on this machine and name it in Host: a browser
 * sends the name it resolved, so a DNS-rebinding page shows up under its own name.
 */
export function statusAccess(
  mode: StatusPageMode,
  remoteAddress: string | undefined,
  host: string | undefined,
): 'serve' | 'forbidden' | 'off' {
  if (mode === 'off') return 'off';
  if (mode === 'all') return 'serve';
  if (!isLoopbackAddress(remoteAddress)) return 'forbidden';
  if (host !== undefined && (host.length > 300 || !LOOPBACK_HOST.test(host))) return 'forbidden';
  return 'serve';
}

interface Asset {
  readonly type: string;
  readonly body: Buffer;
}

const ASSET_FILES: Readonly<Record<string, { file: string; type: string }>> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/index.html': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/status.js': { file: 'status.js', type: 'text/javascript; charset=utf-8' },
  '/status.css': { file: 'status.css', type: 'text/css; charset=utf-8' },
};

let assets: Promise<Map<string, Asset>> | null = null;

/** loadAssets reads the page's files once; a failed read is tried again on the next request. */
function loadAssets(): Promise<Map<string, Asset>> {
  assets ??= Promise.all(
    Object.entries(ASSET_FILES).map(
      async ([path, { file, type }]) => [path, { type, body: await readFile(join(STATUS_PAGE_FOLDER, file)) }] as const,
    ),
  ).then(
    (entries) => new Map(entries),
    (error: unknown) => {
      assets = null;
      throw error;
    },
  );
  return assets;
}

/** The headers every answer of the page carries. */
const PAGE_HEADERS = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/**
 * serveStatusPage answers a request for one of STATUS_PATHS (the caller checked the path and the method);
 * `report` is called only for /status.json.
 */
export function serveStatusPage(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  mode: StatusPageMode,
  report: () => StatusReport,
): void {
  const access = statusAccess(mode, req.socket.remoteAddress, req.headers.host);
  if (access === 'off') {
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
    return;
  }
  if (access === 'forbidden') {
    res.writeHead(403, { 'content-type': 'text/plain; charset=utf-8', ...PAGE_HEADERS }).end(FORBIDDEN_HINT);
    return;
  }
  if (path === '/status.json') {
    const body = `${JSON.stringify(report())}\n`;
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', ...PAGE_HEADERS }).end(body);
    return;
  }
  loadAssets().then(
    (files) => {
      const asset = files.get(path)!;
      res.writeHead(200, { 'content-type': asset.type, ...PAGE_HEADERS }).end(asset.body);
    },
    (error: Error) =>
      res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(`status page: ${error.message}\n`),
  );
}
