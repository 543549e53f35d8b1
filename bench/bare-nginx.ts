/**
 * nginx's own floor for traffic during reloads: a stock nginx with a minimal proxy config (no
 * controller), reloaded by SIGHUP at a given pace. Whatever errors its clients see there come from
 * nginx's reload itself, so the controller's figure is read against this one.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nginxBinary } from '../src/nginx/binary.js';
import { waitFor } from '../test/support/cluster.js';
import { freePort, waitForPort } from '../test/support/net.js';

/** BareNginx is a running stock nginx that proxies every request to one backend. */
export interface BareNginx {
  readonly httpPort: number;
  /** the master's pid */
  readonly pid: number;
  /** reload sends SIGHUP to the master: new workers with the same config, the old ones shut down gracefully */
  reload(): void;
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
 * startBareNginx runs nginx on a free port with 2 workers, keep-alive to clients and to `backendPort` on `backendIp`, as
 * the controller's config has.
 */
export async function startBareNginx(backendPort: number, backendIp = '127.0.0.1'): Promise<BareNginx> {
  const dir = await mkdtemp(join(tmpdir(), 'ia-bare-nginx-'));
  await mkdir(join(dir, 'tmp'));
  const httpPort = await freePort();
  const conf = join(dir, 'nginx.conf');
  await writeFile(
    conf,
    `worker_processes 2;
pid nginx.pid;
error_log error.log error;
events { worker_connections 16384; multi_accept on; }
http {
    client_body_temp_path tmp; proxy_temp_path tmp; fastcgi_temp_path tmp; uwsgi_temp_path tmp; scgi_temp_path tmp;
    access_log off;
    keepalive_timeout 75s;
    upstream backend { server ${backendIp}:${backendPort}; keepalive 32; }
    server {
        listen ${httpPort} default_server;
        location / { proxy_http_version 1.1; proxy_set_header Connection ""; proxy_pass http://backend; }
    }
}
`,
  );
  const binary = nginxBinary();
  // nginx goes to the background; its launcher exits once the master runs. No pipes: the master would hold them.
  await new Promise<void>((resolve, reject) =>
    spawn(binary, ['-p', dir, '-c', conf], { stdio: 'ignore' }).once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`nginx exited ${code}; see ${dir}/error.log`)),
    ),
  );
  await waitForPort(httpPort);
  const pid = Number((await readFile(join(dir, 'nginx.pid'), 'utf8')).trim());
  return {
    httpPort,
    pid,
    reload: () => process.kill(pid, 'SIGHUP'),
    close: async () => {
      process.kill(pid, 'SIGQUIT');
      await waitFor('nginx to quit', async () => !alive(pid), 10_000, 20).catch(() => process.kill(pid, 'SIGKILL'));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
