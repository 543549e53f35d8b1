/**
 * A real nginx with the Lua balancer, configured as the controller's template will render it
 * (lua_shared_dict ia_config, the balancer upstream, the control socket), plus test backends on
 * 127.0.0.2-4 standing in for pods. Tests push tables through ControlChannel as the controller does.
 */
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { ControlChannel, newControlToken } from '../../src/nginx/control.js';
import { CONTROL_SOCKET, CONTROL_TOKEN_ENV, CONTROL_TOKEN_HEADER } from '../../src/nginx/control.js';
import type { BackendPeer } from '../../src/model/pushed-tables.js';
import { luaString } from '../../src/render/quote.js';
import { issueCertificate, type KeyPair } from '../../src/tls/issue.js';
import { freePort, waitForPort } from '../support/net.js';
import { stopProcessGroup } from '../support/nginx.js';

const LUA_DIR = resolve(import.meta.dirname, '../../lua');
const NGINX = process.env.NGINX_BINARY || '/usr/sbin/nginx';

/** LUA_LITERAL_PROBE is written into a Lua block with luaString; `/lua-literal` prints what Lua read back. */
export const LUA_LITERAL_PROBE = 'a"b\\c\'}{ ]]--[[ $x;\n\r\t\0 # é 💥 \\ddd\\065';

/** LuaNginx is a running nginx with the Lua balancer and its control channel. */
export interface LuaNginx {
  readonly dir: string;
  readonly port: number;
  readonly tlsPort: number;
  /** the shared Ingress server's port (options.profiles), and its TLS port */
  readonly routerPort: number;
  readonly routerTlsPort: number;
  readonly token: string;
  readonly socketPath: string;
  readonly control: ControlChannel;
  readonly defaultCert: KeyPair;
  /** reload sends SIGHUP and waits until the old workers are gone */
  reload(): Promise<void>;
  /** errorLog is nginx's error.log so far */
  errorLog(): Promise<string>;
  stop(): Promise<void>;
}

/** NginxOptions change what the harness renders. */
export interface NginxOptions {
  /** the control token in the master's environment; undefined: none at all */
  readonly token?: string | undefined;
  /** client_max_body_size of the control server (the template's is 64m) */
  readonly maxBody?: string;
  /** client_body_buffer_size of the control server (the template's equals maxBody) */
  readonly bodyBuffer?: string;
  /**
   * a shared Ingress server on `routerPort` as issue 29's template renders it: `location /` runs the Lua router
   * (ingress_router.route) and each of these profile keys has its named location `@ia_p_<key>`, answering the
   * variables it sees (profileAnswer); host `nometrics.test` has its own server, routed without request metrics
   */
  readonly profiles?: readonly string[];
  /** the router's bound on remembered request hosts (its max_resolved), set in init_by_lua */
  readonly maxResolved?: number;
  /** lua_shared_dict ia_config's size (64m) */
  readonly configSize?: string;
}

/** PROFILE_VARIABLES are what each test profile answers, space-separated after its key (empty ones as `~`). */
export const PROFILE_VARIABLES = [
  'proxy_upstream_name',
  'ia_host',
  'ia_route',
  'namespace',
  'ingress_name',
  'service_name',
  'service_port',
  'uri',
  'args',
] as const;

/** router is the shared Ingress server of `options.profiles`, or nothing. */
function router(routerPort: number, routerTlsPort: number, options: NginxOptions): string {
  if (!options.profiles) return '';
  const shown = PROFILE_VARIABLES.map((v) => `[$${v}]`).join(' ');
  const profiles = options.profiles.map((key) => `    location @ia_p_${key} { return 200 "${key} ${shown}"; }`);
  const declared = `set $proxy_upstream_name "-";
    set $namespace "";
    set $ingress_name "";
    set $service_name "";
    set $service_port "";`;
  return `
  server {
    listen 127.0.0.1:${routerPort} reuseport;
    listen 127.0.0.1:${routerTlsPort} ssl reuseport;
    server_name _;
    ${declared}
    set $ia_host "";
    set $ia_route "";
    set $ia_canary "";
    add_header x-worker $pid always;
    location / { rewrite_by_lua_block { require("ingress_actors.ingress_router").route(true) } }
    # nginx's own auto_redirect, for the router's to be compared with: a request for /nginx-redirect answers 301
    location = /nginx-redirect/ { proxy_pass http://127.0.0.1:9; }
    # what this worker's router cache holds: request hosts remembered, stored hosts decoded so far
    location = /resolved-count {
      content_by_lua_block { ngx.print(require("ingress_actors.ingress_router").resolved_count()) }
    }
    location = /decoded-count {
      content_by_lua_block { ngx.print(require("ingress_actors.ingress_router").decoded_count()) }
    }
${profiles.join('\n')}
  }
  server {
    listen 127.0.0.1:${routerPort};
    server_name nometrics.test;
    ${declared}
    add_header x-worker $pid always;
    location / { rewrite_by_lua_block { require("ingress_actors.ingress_router").route(false) } }
${profiles.join('\n')}
  }`;
}

function conf(
  dir: string,
  port: number,
  tlsPort: number,
  routerPorts: [number, number],
  options: NginxOptions,
): string {
  const maxBody = options.maxBody ?? '4m';
  const buffer = options.bodyBuffer ?? maxBody;
  return `
load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;
worker_processes 2;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log notice;
env ${CONTROL_TOKEN_ENV};
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  lua_package_path "${LUA_DIR}/?.lua;;";
  lua_shared_dict ia_config ${options.configSize ?? '64m'};
  lua_shared_dict ia_sticky 1m;
  lua_shared_dict ia_metrics 1m;
  init_by_lua_block {
    require("ingress_actors.init").master()
    ${options.maxResolved ? `require("ingress_actors.ingress_router").max_resolved = ${options.maxResolved}` : ''}
  }
  rewrite_by_lua_block { require("ingress_actors.balancer").rewrite() }
  log_by_lua_block { require("ingress_actors.balancer").log() }
  ssl_certificate_by_lua_block { require("ingress_actors.certificate").serve() }
  ssl_certificate ${dir}/default.pem;
  ssl_certificate_key ${dir}/default.pem;
  ssl_session_tickets off;
  ssl_session_cache off;
  proxy_next_upstream error timeout;
  proxy_next_upstream_tries 3;
  proxy_connect_timeout 2s;
  upstream upstream_balancer {
    server 0.0.0.1;
    balancer_by_lua_block { require("ingress_actors.balancer").balance() }
    keepalive 32;
  }
  server {
    listen unix:${dir}/${CONTROL_SOCKET};
    set $proxy_upstream_name "-";
    access_log off;
    client_max_body_size ${maxBody};
    client_body_buffer_size ${buffer};
    client_body_in_single_buffer on;
    location = /backends { content_by_lua_block { require("ingress_actors.control").backends() } }
    location = /certificates { content_by_lua_block { require("ingress_actors.control").certificates() } }
    location = /routes { content_by_lua_block { require("ingress_actors.control").routes() } }
    location = /ingress-routes { content_by_lua_block { require("ingress_actors.control").ingress_routes() } }
    location = /status { content_by_lua_block { require("ingress_actors.control").status() } }
    location = /metrics { content_by_lua_block { require("ingress_actors.control").metrics() } }
    location / { return 404; }
  }
  server {
    # reuseport: the kernel spreads new connections over both workers
    listen 127.0.0.1:${port} reuseport;
    listen 127.0.0.1:${tlsPort} ssl reuseport;
    server_name _;
    set $proxy_upstream_name "-";
    add_header x-worker $pid always;
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    # test only: the path names the backend, as nginx.conf's per-location names would
    location ~ ^/to/(?<ia_name>[^/]+)/ {
      set $proxy_upstream_name $ia_name;
      proxy_pass http://upstream_balancer;
    }
    # a location with its own rewrite_by_lua: the balancer's rewrite does not run there
    location ~ ^/own/(?<ia_own>[^/]+)/ {
      set $proxy_upstream_name $ia_own;
      rewrite_by_lua_block { ngx.req.set_header("x-own", "1") }
      proxy_pass http://upstream_balancer;
    }
    location = /self { return 200 "self\\n"; }
    # what this worker decoded of the keyed tables: "<backends> <certificates>"
    location = /tables-decoded { content_by_lua_block { ngx.print(require("ingress_actors.tables").decoded()) } }
    location = /lua-literal { content_by_lua_block { ngx.print(${luaString(LUA_LITERAL_PROBE)}) } }
    location / { return 404 "public 404\\n"; }
  }${router(...routerPorts, options)}
}
`;
}

/** startLuaNginx writes the config into a fresh folder and starts nginx with the token in its environment. */
export async function startLuaNginx(options: NginxOptions = { token: newControlToken() }): Promise<LuaNginx> {
  const dir = await mkdtemp(join(tmpdir(), 'ia-lua-'));
  // workers run as nobody: they must reach the Lua files and the folder
  await chmod(dir, 0o755);
  const [port, tlsPort, routerPort, routerTlsPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const defaultCert = await issueCertificate({ commonName: 'default.invalid', dnsNames: ['default.invalid'] });
  await writeFile(join(dir, 'default.pem'), defaultCert.certPem + defaultCert.keyPem, { mode: 0o600 });
  await writeFile(join(dir, 'nginx.conf'), conf(dir, port, tlsPort, [routerPort, routerTlsPort], options));
  const env: Record<string, string | undefined> = { ...process.env, [CONTROL_TOKEN_ENV]: options.token };
  if (options.token === undefined) delete env[CONTROL_TOKEN_ENV];
  const child: ResultPromise = execa(NGINX, ['-p', `${dir}/`, '-c', `${dir}/nginx.conf`, '-g', 'daemon off;'], {
    reject: false,
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
    env,
    extendEnv: false,
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = child.then((r) => new Error(`nginx exited (${r.exitCode ?? r.signal}): ${stderr}`));
  await Promise.race([waitForPort(port), exited.then((e) => Promise.reject(e))]);
  const token = options.token ?? '';
  const socketPath = join(dir, CONTROL_SOCKET);
  return {
    dir,
    port,
    tlsPort,
    routerPort,
    routerTlsPort,
    token,
    socketPath,
    control: new ControlChannel(socketPath, token),
    defaultCert,
    async reload() {
      const before = (await readFile(join(dir, 'error.log'), 'utf8')).split('\n').length;
      process.kill(child.pid!, 'SIGHUP');
      for (const deadline = Date.now() + 10_000; Date.now() < deadline; ) {
        const lines = (await readFile(join(dir, 'error.log'), 'utf8')).split('\n').slice(before - 1);
        const started = lines.filter((l) => l.includes('start worker process')).length;
        const exited = lines.filter((l) => /worker process \d+ exited/.test(l)).length;
        if (started >= 2 && exited >= 2) return;
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error('nginx did not finish reloading');
    },
    errorLog: async () => readFile(join(dir, 'error.log'), 'utf8'),
    async stop() {
      await stopProcessGroup(child);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Pod is a test backend on one loopback address that answers its name (and waits `delayMs` first). */
export interface Pod {
  readonly name: string;
  readonly peer: BackendPeer;
  /** hits counts the requests it answered */
  hits: number;
  close(): Promise<void>;
}

/** startPod starts a Pod on `address` (127.0.0.2, 127.0.0.3, …) and a free port. */
export async function startPod(name: string, address: string, delayMs = 0): Promise<Pod> {
  const server: Server = createServer((req, res) => {
    pod.hits++;
    setTimeout(() => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ backend: name, path: req.url }));
    }, delayMs);
  });
  await new Promise<void>((done) => server.listen(0, address, done));
  const { port } = server.address() as AddressInfo;
  const pod: Pod = {
    name,
    peer: { address, port },
    hits: 0,
    close: () =>
      new Promise((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
  return pod;
}

/** refusedPeer is an address and port where nothing listens: a connect there is refused at once. */
export async function refusedPeer(): Promise<BackendPeer> {
  return { address: '127.0.0.5', port: await freePort() };
}

/** Answer is one request's outcome through nginx. */
export interface Answer {
  readonly status: number;
  readonly backend: string | undefined;
  readonly worker: string | undefined;
  readonly body: string;
}

/** call sends one request on a new connection to nginx's public port. */
export function call(nginx: LuaNginx, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((done, fail) => {
    const req = request(
      { host: '127.0.0.1', port: nginx.port, path, agent: false, headers: { host: 'test.example', ...headers } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => {
          let backend: string | undefined;
          try {
            backend = (JSON.parse(body) as { backend?: string }).backend;
          } catch {
            backend = undefined;
          }
          const worker = res.headers['x-worker'];
          done({ status: res.statusCode ?? 0, backend, worker: typeof worker === 'string' ? worker : undefined, body });
        });
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error(`request to ${path} timed out`)));
    req.on('error', fail);
    req.end();
  });
}

/** tally counts the backends that answered `n` requests sent `concurrency` at a time. */
export async function tally(
  nginx: LuaNginx,
  path: string,
  n: number,
  concurrency = 8,
): Promise<{ backends: Map<string, number>; workers: Set<string>; statuses: Map<number, number> }> {
  const backends = new Map<string, number>();
  const statuses = new Map<number, number>();
  const workers = new Set<string>();
  let sent = 0;
  const lane = async () => {
    while (sent < n) {
      sent++;
      const a = await call(nginx, path);
      statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
      if (a.backend) backends.set(a.backend, (backends.get(a.backend) ?? 0) + 1);
      if (a.worker) workers.add(a.worker);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  return { backends, workers, statuses };
}

/** controlRequest sends one control request as is (a token of its own, or none: null), for what ControlChannel never sends. */
export function controlRequest(
  nginx: LuaNginx,
  method: string,
  path: string,
  body?: string,
  token: string | null = nginx.token,
): Promise<{ status: number; body: string }> {
  return new Promise((done, fail) => {
    const headers: Record<string, string | number> = { host: 'localhost' };
    if (token !== null) headers[CONTROL_TOKEN_HEADER] = token;
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = Buffer.byteLength(body);
    }
    const req = request({ socketPath: nginx.socketPath, method, path, agent: false, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => done({ status: res.statusCode ?? 0, body: text }));
    });
    req.setTimeout(10_000, () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.on('error', fail);
    req.end(body);
  });
}
