/**
 * Bare nginx processes for benchmarks, beside the controller's, each in its own prefix in a temp folder, started
 * daemonised (the master leads its process group): nginx's own floor for traffic during reloads (a stock nginx with a
 * minimal proxy config, reloaded by SIGHUP at a given pace, so the controller's figure is read against it), a stock
 * backend or collector, and a worker to time Lua in.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nginxBinary } from '../src/nginx/binary.js';
import { modulesPath } from '../src/nginx/modules.js';
import { waitFor } from '../test/support/cluster.js';
import { luaNginxConf } from '../test/support/lua-nginx-conf.js';
import { freePort, get, waitForPort } from '../test/support/net.js';

/** NginxProcess is a running bare nginx: its port, its master's pid, and how to stop it. */
export interface NginxProcess {
  readonly port: number;
  readonly pid: number;
  close(): Promise<void>;
}

/** alive: signal 0 checks that the process exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * startNginx writes `conf(port)` (a whole nginx.conf; relative paths are in its own prefix, which has tmp/) for a free
 * port and starts it; `address` is where it listens, for the wait.
 */
export async function startNginx(
  conf: (port: number) => string | Promise<string>,
  address = '127.0.0.1',
): Promise<NginxProcess> {
  const dir = await mkdtemp(join(tmpdir(), 'ia-bench-nginx-'));
  await mkdir(join(dir, 'tmp'));
  const port = await freePort();
  const file = join(dir, 'nginx.conf');
  await writeFile(file, await conf(port));
  // nginx goes to the background; its launcher exits once the master runs. No pipes: the master would hold them.
  const started = await new Promise<boolean>((resolve) =>
    spawn(nginxBinary(), ['-p', dir, '-c', file], { stdio: 'ignore' }).once('exit', (code) => resolve(code === 0)),
  );
  if (!started) throw new Error(`bench nginx did not start; see ${dir}/error.log`);
  const pid = Number((await readFile(join(dir, 'nginx.pid'), 'utf8')).trim());
  await waitForPort(port, 10_000, address);
  return {
    port,
    pid,
    close: async () => {
      process.kill(pid, 'SIGQUIT');
      await waitFor('nginx to quit', async () => !alive(pid), 10_000, 20).catch(() => process.kill(pid, 'SIGKILL'));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** TEMP_PATHS keeps every temp folder in the prefix. */
export const TEMP_PATHS =
  'client_body_temp_path tmp; proxy_temp_path tmp; fastcgi_temp_path tmp; uwsgi_temp_path tmp; scgi_temp_path tmp;';

/** BareNginx is a running stock nginx that proxies every request to one backend. */
export interface BareNginx {
  readonly httpPort: number;
  /** the master's pid */
  readonly pid: number;
  /** reload sends SIGHUP to the master: new workers with the same config, the old ones shut down gracefully */
  reload(): void;
  close(): Promise<void>;
}

/**
 * startBareNginx runs nginx on a free port with 2 workers, keep-alive to clients and to `backendPort` on `backendIp`, as
 * the controller's config has. With `lua`, the same nginx with Debian's Lua module and the three Lua phases a request
 * of the controller's nginx passes, each doing nothing (the peer set by balancer_by_lua): what entering them costs.
 */
export async function startBareNginx(
  backendPort: number,
  backendIp = '127.0.0.1',
  options: { lua?: boolean } = {},
): Promise<BareNginx> {
  const modules = options.lua ? await modulesPath(nginxBinary()) : '';
  const upstream = options.lua
    ? `server 0.0.0.1; balancer_by_lua_block { require("ngx.balancer").set_current_peer("${backendIp}", ${backendPort}) }`
    : `server ${backendIp}:${backendPort};`;
  const phases = options.lua ? 'rewrite_by_lua_block { } log_by_lua_block { } ' : '';
  const nginx = await startNginx(
    (
      port,
    ) => `${options.lua ? `load_module ${modules}/ndk_http_module.so;\nload_module ${modules}/ngx_http_lua_module.so;\n` : ''}worker_processes 2;
pid nginx.pid;
error_log error.log error;
events { worker_connections 16384; multi_accept on; }
http {
    ${TEMP_PATHS}
    access_log off;
    keepalive_timeout 75s;
    upstream backend { ${upstream} keepalive 32; }
    server {
        listen ${port} default_server;
        location / { ${phases}proxy_http_version 1.1; proxy_set_header Connection ""; proxy_pass http://backend; }
    }
}
`,
  );
  return { httpPort: nginx.port, pid: nginx.pid, reload: () => process.kill(nginx.pid, 'SIGHUP'), close: nginx.close };
}

/** startStaticNginx is a stock nginx on 127.0.0.2, one worker, answering `ok` itself; `locations` adds to its server. */
export function startStaticNginx(locations = ''): Promise<NginxProcess> {
  return startNginx(
    (port) => `worker_processes 1;
pid nginx.pid;
error_log error.log error;
events { worker_connections 4096; }
http {
    ${TEMP_PATHS}
    access_log off;
    server {
        listen 127.0.0.2:${port};
        location / { return 200 "ok\\n"; }
${locations}    }
}
`,
    '127.0.0.2',
  );
}

/**
 * timeInLuaWorker runs `lua` (a content handler's body that prints microseconds per call) in a real nginx worker with
 * the project's Lua path, `http` lines beside its server and `server` lines in it, `runs` times `gapMs` apart (so a
 * worker's timers run between): the Lua side of a cost without the machine's noise, one figure a run.
 */
export async function timeInLuaWorker(options: {
  readonly http: string;
  readonly server: string;
  readonly lua: string;
  readonly runs?: number;
  readonly gapMs?: number;
  readonly path?: string;
  readonly headers?: Record<string, string>;
}): Promise<string> {
  const nginx = await startNginx((port) =>
    luaNginxConf(`${options.http}
    server {
        listen 127.0.0.1:${port};
${options.server}
        location / {
            set $ia_route "0123456789abcdef";
            content_by_lua_block {
${options.lua}
            }
        }
    }`),
  );
  try {
    const runs: number[] = [];
    for (let i = 0; i < (options.runs ?? 5); i++) {
      if (i > 0 && options.gapMs) await new Promise((resolve) => setTimeout(resolve, options.gapMs));
      const answer = await get({ host: 'x', path: options.path ?? '/', port: nginx.port, headers: options.headers });
      runs.push(Number(answer.body));
    }
    return runs.map((us) => us.toFixed(2)).join(' ');
  } finally {
    await nginx.close();
  }
}
