/**
 * What loading the Lua module alone costs nginx per server and location block: the same plain config
 * (no Lua directive at all) with and without `load_module` of NDK and ngx_http_lua, its `nginx -t` and
 * its master's RSS. lua-nginx-module 0.10.23 (Debian 12) makes an SSL_CTX for cosockets in every
 * location configuration it merges (ngx_http_lua_set_ssl), whether or not Lua runs there.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../src/log.js';
import { nginxBinary, testConfig } from '../src/nginx/binary.js';
import { checkLua } from '../src/nginx/lua.js';
import { spawnMaster } from '../src/nginx/master.js';
import { waitFor } from '../test/support/cluster.js';
import { freePort } from '../test/support/net.js';
import { mb, rssBytes } from './proc.js';

/** plainConfig has `servers` servers of `locations` locations each, on one loopback port. */
function plainConfig(modules: readonly string[], port: number, servers: number, locations: number): string {
  const lines = [...modules.map((m) => `load_module ${JSON.stringify(m)};`)];
  lines.push('worker_processes 1;', 'pid nginx.pid;', 'error_log stderr;', 'events {}', 'http {', 'access_log off;');
  lines.push('server_names_hash_max_size 16384;', 'server_names_hash_bucket_size 128;');
  for (let s = 0; s < servers; s++) {
    lines.push(`server { listen 127.0.0.1:${port}; server_name h${s}.bench.local;`);
    for (let l = 0; l < locations; l++) lines.push(`location /p${l} { return 200; }`);
    lines.push('}');
  }
  lines.push('}', '');
  return lines.join('\n');
}

/** costOf times `nginx -t` of `text` (median of `runs`), then starts a master on it for its RSS once configured. */
async function costOf(dir: string, text: string, runs: number): Promise<{ testMs: number; rss: number }> {
  const conf = join(dir, 'nginx.conf');
  await writeFile(conf, text);
  const samples: number[] = [];
  for (let r = 0; r < runs; r++) {
    const t = performance.now();
    const verdict = await testConfig(nginxBinary(), dir, conf);
    samples.push(performance.now() - t);
    if (!verdict.ok) throw new Error(`nginx -t refused the plain config: ${verdict.output}`);
  }
  const master = spawnMaster(nginxBinary(), dir, conf, createLogger({ level: 'error' }));
  try {
    // The pid file is written once the config is parsed and the sockets bound: its memory is all there.
    await waitFor(
      'the plain master',
      async () => (await readFile(join(dir, 'nginx.pid'), 'utf8').catch(() => '')).trim() === String(master.pid),
      120_000,
      50,
    );
    return { testMs: samples.sort((a, b) => a - b)[Math.floor(runs / 2)]!, rss: rssBytes(master.pid) };
  } finally {
    master.kill();
    await master.exited;
  }
}

/** runLuaModuleCost prints one line: the plain config with and without the Lua module, side by side. */
export async function runLuaModuleCost(servers = 3000, locations = 3, runs = 3): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'ia-lua-cost-'));
  try {
    const check = await checkLua(nginxBinary(), dir);
    if (!check.ok) throw new Error(`the Lua module cannot load here: ${check.why}`);
    const port = await freePort();
    const plain = await costOf(dir, plainConfig([], port, servers, locations), runs);
    const lua = await costOf(dir, plainConfig(check.settings.modules, port, servers, locations), runs);
    const blocks = servers * (locations + 1);
    console.log(
      `bench scale-certificates lua-module: servers=${servers} locations=${servers * locations} runs=${runs}` +
        ` nginx_t_ms plain=${plain.testMs.toFixed(0)} lua_module=${lua.testMs.toFixed(0)}` +
        ` (${(lua.testMs / plain.testMs).toFixed(1)}x) master_rss_mb plain=${mb(plain.rss)} lua_module=${mb(lua.rss)}` +
        ` per_block: +${((lua.testMs - plain.testMs) / blocks).toFixed(2)} ms` +
        ` +${((lua.rss - plain.rss) / blocks / 1024).toFixed(1)} KB`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
