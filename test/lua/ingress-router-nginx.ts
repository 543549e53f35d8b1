/**
 * The nginx of the Ingress router's differential tests: the model's locations rendered as the template renders them
 * (server_name, modifiers, quoting, and proxy_pass where the template writes one, so nginx's auto_redirect applies as
 * it would), each answering which location it is, beside a shared server as issue 29 renders it: the route table
 * pushed through POST /ingress-routes (each location a made-up profile of its own), `location /` running
 * lua/ingress_actors/ingress_router.lua's route(), and a named location `@ia_p_<profile>` per location answering
 * which location it is.
 */
import { createHash } from 'node:crypto';
import { Agent, request } from 'node:http';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import type { IngressHostRoutes } from '../../src/model/ingress-routes.js';
import type { Server } from '../../src/model/nginx-model.js';
import type { PathSpec } from '../support/manifests.js';
import { CONTROL_TOKEN_ENV, CONTROL_TOKEN_HEADER, newControlToken } from '../../src/nginx/control.js';
import { quote } from '../../src/render/quote.js';
import { freePort, waitForPort } from '../support/net.js';
import { stopProcessGroup } from '../support/nginx.js';

/** USE_REGEX is the use-regex annotation, on. */
export const USE_REGEX = { 'nginx.ingress.kubernetes.io/use-regex': 'true' };

/** RouterPath is a case's path; each test names the Service it goes to. */
export type RouterPath = Omit<PathSpec, 'service'>;
const p = (path: string, pathType: PathSpec['pathType'] = 'Prefix'): RouterPath => ({ path, pathType });

/** RouterCase is one Ingress of the table-driven cases. */
export interface RouterCase {
  readonly host: string;
  readonly paths: readonly RouterPath[];
  readonly annotations?: Record<string, string>;
}

/** AUTH_URL marks the case whose auth service the whole-config test does not run. */
export const AUTH_URL = 'nginx.ingress.kubernetes.io/auth-url';

/** ROUTER_CASES are the table-driven Ingresses both differential tests serve. */
export const ROUTER_CASES: readonly RouterCase[] = [
  // plain: Exact before Prefix, longest first, element-wise prefixes, `/` the default
  {
    host: 'plain.test',
    paths: [p('/'), p('/foo'), p('/foo/bar/'), p('/foo/bar', 'Exact'), p('/foo.bar'), p('/dir/', 'Exact')],
  },
  // no `/` of its own: the controller's default backend serves it
  { host: 'nofallback.test', paths: [p('/api'), p('/api/v1'), p('/Api', 'Exact')] },
  // use-regex spreads to every path of the host: Prefix becomes `~ ^/x(?:/|$)`, regexes `~*`, longest first
  {
    host: 'regex.test',
    paths: [p('/'), p('/app'), p('/app/v[0-9]+', 'ImplementationSpecific'), p('/app/exact', 'Exact')],
    annotations: USE_REGEX,
  },
  { host: 'regex.test', paths: [p('/static/.*\\.css$', 'ImplementationSpecific')], annotations: USE_REGEX },
  // an Ingress without use-regex on that host: its Prefix becomes a regex too
  { host: 'regex.test', paths: [p('/st'), p('/dir/', 'Exact')] },
  // auth-url: its subrequest's locations are internal, a client asking for one gets 404
  { host: 'auth.test', paths: [p('/app'), p('/')], annotations: { [AUTH_URL]: 'http://auth.example/check' } },
  // a wildcard host and an exact host beneath it
  { host: '*.wild.test', paths: [p('/'), p('/w')] },
  { host: 'a.wild.test', paths: [p('/a', 'Exact')] },
];

const LUA_DIR = resolve(import.meta.dirname, '../../lua');
const NGINX = process.env.NGINX_BINARY || '/usr/sbin/nginx';

/** RouterNginx is a running nginx with the rendered locations on `port` and the shared server (Lua) on `luaPort`. */
export interface RouterNginx {
  /** the rendered locations */
  readonly port: number;
  /** the shared server's answers: the Lua router over the pushed table */
  readonly luaPort: number;
  stop(): Promise<void>;
}

/** externalAuth renders the auth-url location of a location as server.hbs places it, `internal` as external-auth.hbs. */
function externalAuth(server: Server, index: number, backend: number): string {
  const l = server.locations[index]!;
  if (!l.externalAuth) return '';
  return `\n    location = ${quote(l.externalAuth.location)} {\n      internal;\n      proxy_pass http://127.0.0.1:${backend};\n    }`;
}

/** location renders one of the model's locations as the template does, answering "<host> <index>" through a proxy. */
function location(server: Server, index: number, backend: number): string {
  const l = server.locations[index]!;
  const name = quote(`${server.host} ${index}`);
  // the template writes proxy_pass (or grpc_pass) exactly when the location has a `pass`
  const body = l.pass
    ? `proxy_set_header x-ia-location ${name};\n      proxy_pass http://127.0.0.1:${backend};`
    : `return 200 ${name};`;
  return `    location ${l.modifier ? `${l.modifier} ` : ''}${quote(l.match)} {\n      ${body}\n    }`;
}

/** profileOf is the made-up profile key of a server's location: each location its own named location. */
export function profileOf(host: string, location: number): string {
  return createHash('md5').update(`${host} ${location}`).digest('hex');
}

/** profiles renders a named location per location of every server, answering which location it is. */
function profiles(servers: readonly Server[]): string {
  return servers
    .flatMap((s) =>
      s.locations.map(
        (_, i) => `    location @ia_p_${profileOf(s.host, i)} { return 200 ${quote(`${s.host} ${i}`)}; }`,
      ),
    )
    .join('\n');
}

/** pushed is a host's entries as POST /ingress-routes takes them: the location's profile, no unset field. */
export function pushed(table: readonly IngressHostRoutes[]): unknown[] {
  return table.map((h) => ({
    host: h.host,
    entries: h.entries.map((e) => ({
      kind: e.kind,
      path: e.path,
      profile: profileOf(h.host, e.location),
      ...(e.route !== null ? { route: e.route } : {}),
      ...(e.upstream !== null ? { upstream: e.upstream } : {}),
      autoRedirect: e.autoRedirect,
      internal: e.internal,
    })),
  }));
}

/** pushRoutes sends the whole table to POST /ingress-routes; every host must be taken. */
function pushRoutes(socketPath: string, token: string, table: readonly IngressHostRoutes[]): Promise<void> {
  const body = JSON.stringify({ version: 'test-1', base: null, set: pushed(table), remove: [] });
  return new Promise((done, fail) => {
    const headers = { host: 'localhost', [CONTROL_TOKEN_HEADER]: token, 'content-length': Buffer.byteLength(body) };
    const req = request({ socketPath, method: 'POST', path: '/ingress-routes', agent: false, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () =>
        res.statusCode === 201 && text.includes('"refused":[]')
          ? done()
          : fail(new Error(`POST /ingress-routes: ${res.statusCode} ${text}`)),
      );
    });
    req.on('error', fail);
    req.end(body);
  });
}

function conf(dir: string, servers: readonly Server[], ports: { port: number; luaPort: number; backend: number }) {
  const rendered = servers
    .map(
      (s) => `  server {
    listen 127.0.0.1:${ports.port}${s.isDefault ? ' default_server' : ''};
    server_name ${quote(s.serverName)};
${s.locations.map((_, i) => location(s, i, ports.backend) + externalAuth(s, i, ports.backend)).join('\n')}
  }`,
    )
    .join('\n');
  return `
load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;
worker_processes 1;
pid ${dir}/nginx.pid;
env ${CONTROL_TOKEN_ENV};
error_log ${dir}/error.log notice;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  server_names_hash_bucket_size 128;
  lua_package_path "${LUA_DIR}/?.lua;;";
  lua_shared_dict ia_config 16m;
  init_by_lua_block { require("ingress_actors.init").master() }
  # the control channel: the route table is pushed here (POST /ingress-routes), as the controller pushes it
  server {
    listen unix:${dir}/control.sock;
    client_max_body_size 16m;
    client_body_buffer_size 16m;
    location = /ingress-routes { content_by_lua_block { require("ingress_actors.control").ingress_routes() } }
  }
  server {
    listen 127.0.0.1:${ports.backend};
    location / { return 200 $http_x_ia_location; }
  }
${rendered}
  server {
    listen 127.0.0.1:${ports.luaPort};
    # the body is a host's entries (JSON): what prepare_host makes of them
    location = /prepare {
      content_by_lua_block {
        ngx.req.read_body()
        local h = { host = "h", entries = require("cjson.safe").decode(ngx.req.get_body_data()) }
        local p, err = require("ingress_actors.ingress_router").prepare_host(h)
        ngx.print(p and "ok" or err)
      }
    }
    # the shared server: the router picks the entry and jumps to its profile, which answers "<host> <index>"
    set $proxy_upstream_name "-";
    location / { rewrite_by_lua_block { require("ingress_actors.ingress_router").route(false) } }
${profiles(servers)}
  }
}
`;
}

/**
 * startRouterNginx renders the servers' locations (the template's matches, quoting and proxy_pass) and the shared
 * server into one nginx with one worker, starts it, and pushes `table` (every host must be taken).
 */
export async function startRouterNginx(
  servers: readonly Server[],
  table: readonly IngressHostRoutes[],
): Promise<RouterNginx> {
  const dir = await mkdtemp(join(tmpdir(), 'ia-ingress-router-'));
  await chmod(dir, 0o755);
  const ports = { port: await freePort(), luaPort: await freePort(), backend: await freePort() };
  const token = newControlToken();
  await writeFile(join(dir, 'nginx.conf'), conf(dir, servers, ports));
  const child: ResultPromise = execa(NGINX, ['-p', `${dir}/`, '-c', `${dir}/nginx.conf`, '-g', 'daemon off;'], {
    reject: false,
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
    env: { ...process.env, [CONTROL_TOKEN_ENV]: token },
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = child.then((r) => new Error(`nginx exited (${r.exitCode ?? r.signal}): ${stderr}`));
  const stop = async () => {
    await stopProcessGroup(child);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await Promise.race([
      Promise.all([waitForPort(ports.port), waitForPort(ports.luaPort)]),
      exited.then((e) => Promise.reject(e)),
    ]);
    await pushRoutes(join(dir, 'control.sock'), token, table);
  } catch (error) {
    // not listening (an nginx.conf without servers on a port, say): stop it, or it outlives the test
    await stop();
    throw error;
  }
  return { port: ports.port, luaPort: ports.luaPort, stop };
}

/** agent keeps connections to the test nginx open between requests. */
export const agent = new Agent({ keepAlive: true, maxSockets: 8 });

/**
 * answer is "<host> <index>" when a location answered (or what `named` makes of its body), "redirect <path>" for
 * nginx's auto_redirect, else the status (nginx's 400 for a bad URI, a 404).
 */
export function answer(
  port: number,
  host: string,
  path: string,
  named: (body: string) => string = (body) => body,
): Promise<string> {
  return new Promise((done, fail) => {
    const req = request({ host: '127.0.0.1', port, path, agent, headers: { host } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => {
        if (res.statusCode === 200) done(named(body));
        else if (res.statusCode === 301) {
          const { pathname, search } = new URL(res.headers.location ?? '', 'http://x');
          done(`redirect ${pathname}${search}`);
        } else done(`status ${res.statusCode}`);
      });
    });
    req.setTimeout(10_000, () => req.destroy(new Error(`request to ${host}${path} timed out`)));
    req.on('error', fail);
    req.end();
  });
}

/** Mismatch is one request the two servers answered differently. */
export interface Mismatch {
  readonly host: string;
  readonly uri: string;
  readonly nginx: string;
  readonly lua: string;
}

/** differences asks both servers for every host and URI and lists where they disagree; `picks` gets nginx's answers. */
export async function differences(
  nginx: RouterNginx,
  hosts: readonly string[],
  uris: readonly string[],
  picks?: Map<string, string>,
): Promise<Mismatch[]> {
  const pairs = hosts.flatMap((host) => uris.map((uri) => ({ host, uri })));
  const found: Mismatch[] = [];
  let next = 0;
  const lane = async () => {
    while (next < pairs.length) {
      const { host, uri } = pairs[next++]!;
      const [rendered, lua] = await Promise.all([answer(nginx.port, host, uri), answer(nginx.luaPort, host, uri)]);
      picks?.set(`${host} ${uri}`, rendered);
      if (rendered !== lua) found.push({ host, uri, nginx: rendered, lua });
    }
  };
  await Promise.all(Array.from({ length: 4 }, lane));
  return found;
}
