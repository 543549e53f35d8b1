/**
 * Where nginx's stream module is, for the TCP and UDP services and ssl-passthrough: built in
 * (`--with-stream`), a dynamic module to load (`--with-stream=dynamic`, Debian's
 * libnginx-mod-stream in the modules folder), or missing. Found once, from `nginx -V`.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { execa } from 'execa';
import type { StreamSettings } from '../model/machine-settings.js';
import { TERMINATE_SOCKET } from '../model/gateway/tls-terminate.js';
import { DEFAULT_STREAM_SETTINGS, HTTPS_SOCKET, RELAY_SOCKET } from '../model/stream.js';
import { modulesPath } from './modules.js';

/** A unix socket path longer than this does not fit sockaddr_un on Linux (108 bytes with the NUL). */
const MAX_SOCKET_PATH = 107;

/** StreamCheck is the verdict: the settings for the model, or why the stream block cannot be written (one line). */
export type StreamCheck =
  | { readonly ok: true; readonly settings: StreamSettings }
  | { readonly ok: false; readonly why: string };

/**
 * checkStream finds the stream module of `binary` and places the internal sockets in `configDir`. Without an nginx to
 * ask (`render` on a machine without it), Debian's module path is assumed.
 */
export async function checkStream(binary: string, configDir: string): Promise<StreamCheck> {
  const socketDir = resolve(configDir);
  // TLS Terminate's internal sockets (tls_<16 hex>.sock) are the longest name
  const longest = join(
    socketDir,
    [RELAY_SOCKET, HTTPS_SOCKET, `tls_${'0'.repeat(16)}.sock`].sort((a, b) => b.length - a.length)[0]!,
  );
  if (longest.length > MAX_SOCKET_PATH)
    return { ok: false, why: `the unix socket ${longest} is longer than ${MAX_SOCKET_PATH} bytes (--config-dir)` };
  const version = await execa(binary, ['-V'], { reject: false, all: true, timeout: 10_000 }).catch(() => null);
  const said = version?.all ?? '';
  if (version?.exitCode !== 0 || !said.includes('configure arguments'))
    return { ok: true, settings: { ...DEFAULT_STREAM_SETTINGS, socketDir } };
  if (/--with-stream(\s|$)/.test(said)) return { ok: true, settings: { modules: [], socketDir } };
  const module = join(await modulesPath(binary), 'ngx_stream_module.so');
  if (!/--with-stream=dynamic/.test(said) || !existsSync(module))
    return { ok: false, why: `${module} not found (Debian: apt-get install libnginx-mod-stream)` };
  return { ok: true, settings: { modules: [module], socketDir } };
}

/**
 * streamSockets are the unix sockets nginx listens on with ssl-passthrough and TLS Terminate listeners (those in the
 * folder now: their names come and go with the listeners): a master killed with -9 leaves them.
 */
export function streamSockets(settings: StreamSettings): string[] {
  let terminate: string[] = [];
  try {
    terminate = readdirSync(settings.socketDir).filter((name) => TERMINATE_SOCKET.test(name));
  } catch {
    // no folder yet: nothing left behind
  }
  return [HTTPS_SOCKET, RELAY_SOCKET, ...terminate].map((name) => join(settings.socketDir, name));
}
