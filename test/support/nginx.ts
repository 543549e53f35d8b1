import { access, chmod, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import { CONTROL_SOCKET, CONTROL_TOKEN_ENV } from '../../src/nginx/control.js';
import type { LuaSettings } from '../../src/model/machine-settings.js';
import { ControlChannel, newControlToken } from '../../src/nginx/control.js';
import { nginxBinary } from '../../src/nginx/binary.js';
import { checkLua } from '../../src/nginx/lua.js';
import { findModules } from '../../src/nginx/modules.js';
import { waitForPort } from './net.js';

/** RunningNginx is a real nginx master started by a test. */
export interface RunningNginx {
  readonly process: ResultPromise;
  stop(): Promise<void>;
}

/**
 * startNginx runs `nginx -g 'daemon off;'` on a config folder and waits until it listens on `port` and has written
 * its pid file. nginx writes that file only once every listening socket is bound: another process that took one of
 * the ports meanwhile (free ports are picked, then released) would otherwise pass for this nginx while its master
 * still retries bind() before it gives up.
 */
export async function startNginx(dir: string, port: number): Promise<RunningNginx> {
  const child = execa(nginxBinary(), ['-p', `${dir}/`, '-c', `${dir}/nginx.conf`, '-g', 'daemon off;'], {
    reject: false,
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  let stderr = '';
  let gone = false;
  void child.finally(() => (gone = true));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = child.then((r) => new Error(`nginx exited (${r.exitCode ?? r.signal}): ${stderr}`));
  const started = async () => {
    await waitForPort(port);
    for (;;) {
      try {
        return await access(join(dir, 'nginx.pid'));
      } catch (error) {
        if (gone) throw error; // exited: the race already has its reason
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  };
  await Promise.race([started(), exited.then((e) => Promise.reject(e))]);
  return {
    process: child,
    stop: () => stopProcessGroup(child),
  };
}

/** stopProcessGroup ends a detached nginx master's whole process group, so no worker outlives the test. */
export async function stopProcessGroup(child: ResultPromise): Promise<void> {
  if (child.pid) {
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      /* already gone */
    }
  }
  await child;
}

/**
 * nginxTestBuildOptions are the build options the `nginx -t` property tests render with: the default ones, ports
 * 8080/8443, the ConfigMap ingress/config, and this nginx's optional modules as the controller finds them (so the
 * headers-more and brotli directives are checked too).
 */
export async function nginxTestBuildOptions() {
  return {
    ...defaultBuildOptions,
    configMap: 'ingress/config',
    httpPort: 8080,
    httpsPort: 8443,
    modules: await findModules(nginxBinary()),
  };
}

/** luaSettingsIn is what the controller's checkLua gives for a config folder `dir`, or throws its reason. */
export async function luaSettingsIn(dir: string): Promise<LuaSettings> {
  const lua = await checkLua(nginxBinary(), dir);
  if (!lua.ok) throw new Error(`the Lua balancer cannot run here: ${lua.why}`);
  return lua.settings;
}

/** LuaFolder is a config folder for a test nginx with the Lua balancer, its Lua settings and its control channel. */
export interface LuaFolder {
  readonly dir: string;
  readonly dynamic: LuaSettings;
  readonly control: ControlChannel;
}

/**
 * luaFolder makes a fresh config folder the workers (nobody) can read, puts a fresh control token in the environment
 * the nginx started next inherits, and gives the Lua settings checkLua finds there and the channel to push tables on.
 */
export async function luaFolder(prefix: string): Promise<LuaFolder> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await chmod(dir, 0o755);
  const token = newControlToken();
  process.env[CONTROL_TOKEN_ENV] = token;
  return { dir, dynamic: await luaSettingsIn(dir), control: new ControlChannel(join(dir, CONTROL_SOCKET), token) };
}
