/**
 * Whether this nginx can run the Lua balancer: Debian's libnginx-mod-http-lua (with NDK,
 * lua-resty-core) and lua-cjson, checked once at start by `nginx -t` of a config that loads the
 * modules and the project's own Lua code. Without them the controller renders backends into
 * nginx.conf, as before, and says so once.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { LuaSettings } from '../model/machine-settings.js';
import { CONTROL_SOCKET } from './control.js';
import { PROJECT_ROOT } from '../project-root.js';
import { testConfig } from './binary.js';
import { modulesPath } from './modules.js';

/** LUA_FOLDER is the project's Lua code (lua/ingress_actors/*.lua). */
export const LUA_FOLDER = join(PROJECT_ROOT, 'lua');

/** A unix socket path longer than this does not fit sockaddr_un on Linux (108 bytes with the NUL). */
const MAX_SOCKET_PATH = 107;

/** LuaCheck is the verdict: the settings for the model, or why the balancer cannot run (one line for the log). */
export type LuaCheck =
  | { readonly ok: true; readonly settings: LuaSettings }
  | { readonly ok: false; readonly why: string };

/**
 * checkLua finds the Lua modules of `binary` and has `nginx -t` load them with the project's Lua code, in a
 * scratch folder inside `configDir` (private to the controller). The control socket goes in `configDir`.
 */
export async function checkLua(binary: string, configDir: string): Promise<LuaCheck> {
  const controlSocket = join(resolve(configDir), CONTROL_SOCKET);
  if (controlSocket.length > MAX_SOCKET_PATH)
    return {
      ok: false,
      why: `the control socket ${controlSocket} is longer than ${MAX_SOCKET_PATH} bytes (--config-dir)`,
    };
  const dir = await modulesPath(binary);
  const modules = [join(dir, 'ndk_http_module.so'), join(dir, 'ngx_http_lua_module.so')];
  const missing = modules.filter((m) => !existsSync(m));
  if (missing.length > 0)
    return {
      ok: false,
      why: `${missing.join(' and ')} not found (Debian: apt-get install libnginx-mod-http-lua lua-cjson)`,
    };
  const settings: LuaSettings = { modules, packagePath: `${LUA_FOLDER}/?.lua;;`, controlSocket, requestMetrics: false };
  const scratch = await mkdtemp(join(configDir, '.lua-check-'));
  try {
    const conf = join(scratch, 'nginx.conf');
    await writeFile(conf, probeConfig(settings), { mode: 0o600 });
    const verdict = await testConfig(binary, scratch, conf);
    if (!verdict.ok) return { ok: false, why: `nginx cannot load the Lua balancer: ${verdict.output.split('\n')[0]}` };
    return { ok: true, settings };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** probeConfig loads what the balancer needs: init_by_lua runs under `nginx -t` too, so a missing library shows. */
function probeConfig(settings: LuaSettings): string {
  const q = JSON.stringify;
  return [
    ...settings.modules.map((m) => `load_module ${q(m)};`),
    'pid nginx.pid;',
    'error_log stderr;',
    'events {}',
    'http {',
    `    lua_package_path ${q(settings.packagePath)};`,
    '    init_by_lua_block { require("cjson.safe"); require("ngx.balancer"); require("ngx.ssl"); ' +
      'require("ingress_actors.balancer"); require("ingress_actors.certificate"); require("ingress_actors.control") }',
    '}',
    '',
  ].join('\n');
}
