/**
 * Real processes for the model-based tests: an nginx stand-in that runs the real nginx but holds
 * each start and each `nginx -t` until released, a backend that holds requests, and small
 * process-table helpers. Everything listens on loopback.
 */
import { execFileSync } from 'node:child_process';
import { chmod, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { nginxBinary } from '../../../src/nginx/binary.js';
import { get, type Reply } from '../../support/net.js';

/** alive says whether a pid runs (not a zombie). */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** realNginx is the absolute path of the nginx the tests run. */
export function realNginx(): string {
  const binary = nginxBinary();
  if (binary.includes('/')) return binary;
  return execFileSync('sh', ['-c', `command -v ${binary} || echo /usr/sbin/nginx`], { encoding: 'utf8' }).trim();
}

/** GatedNginx is the stand-in binary and its gates: `start` holds `-g 'daemon off;'`, `test` holds `nginx -t`. */
export interface GatedNginx {
  readonly binary: string;
  /** pids of processes held at a gate now, oldest first */
  waiting(gate: 'start' | 'test'): Promise<number[]>;
  /** lets the given held processes (default: all) go on to run nginx */
  release(gate: 'start' | 'test', pids?: readonly number[]): Promise<void>;
  /** turns a gate (or ignoring SIGQUIT while held) on or off for the processes that come next */
  set(flag: 'hold-start' | 'hold-test' | 'ignore-quit', on: boolean): Promise<void>;
  /** makes the binary unspawnable (ENOENT) until restored */
  remove(): Promise<void>;
  restore(): Promise<void>;
}

const WRAPPER = `#!/bin/sh
# A stand-in for nginx in the model-based tests: the real nginx, but while GATES/hold-<gate>
# exists each start (gate "start") or -t (gate "test") waits, announced as GATES/<gate>-<pid>.wait,
# until the test creates GATES/<gate>-<pid>.go. With GATES/ignore-quit, a held start ignores
# SIGQUIT, as a master that is not yet up cannot act on it.
gates='__GATES__'
gate=
for arg in "$@"; do
  case "$arg" in -t) gate=test ;; 'daemon off;') gate=start ;; esac
done
[ -e "$gates/hold-$gate" ] || gate=
if [ -n "$gate" ]; then
  if [ -e "$gates/ignore-quit" ]; then trap '' QUIT; else trap 'rm -f "$gates/$gate-$$.wait"; exit 0' QUIT; fi
  trap 'rm -f "$gates/$gate-$$.wait"; exit 143' TERM
  : > "$gates/$gate-$$.wait"
  while [ ! -e "$gates/$gate-$$.go" ]; do [ -d "$gates" ] || exit 1; sleep 0.02; done
  rm -f "$gates/$gate-$$.wait" "$gates/$gate-$$.go"
  trap - QUIT TERM
fi
exec '__NGINX__' "$@"
`;

/** gatedNginx writes the stand-in into `dir` (gates in the same folder); `hold` turns gates on from the start. */
export async function gatedNginx(
  dir: string,
  hold: readonly ('hold-start' | 'hold-test' | 'ignore-quit')[] = [],
): Promise<GatedNginx> {
  const binary = join(dir, 'nginx');
  for (const flag of hold) await writeFile(join(dir, flag), '');
  await writeFile(binary, WRAPPER.replace('__GATES__', dir).replace('__NGINX__', realNginx()));
  await chmod(binary, 0o755);
  const waiting = async (gate: 'start' | 'test') => {
    const files = (await readdir(dir)).filter((f) => f.startsWith(`${gate}-`) && f.endsWith('.wait'));
    return files
      .map((f) => Number(f.slice(gate.length + 1, -5)))
      .filter(alive)
      .sort((a, b) => a - b);
  };
  return {
    binary,
    waiting,
    release: async (gate, pids) => {
      for (const pid of pids ?? (await waiting(gate))) await writeFile(join(dir, `${gate}-${pid}.go`), '');
    },
    set: (flag, on) => (on ? writeFile(join(dir, flag), '') : rm(join(dir, flag), { force: true })),
    remove: () => rename(binary, `${binary}.removed`),
    restore: () => rename(`${binary}.removed`, binary),
  };
}

/** HoldingBackend answers `/hold` requests only when released; everything else at once. */
export interface HoldingBackend {
  readonly port: number;
  /** requests held now */
  held(): number;
  release(): void;
  close(): Promise<void>;
}

/** startHoldingBackend starts a HoldingBackend on loopback. */
export async function startHoldingBackend(): Promise<HoldingBackend> {
  let held: ServerResponse[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (!req.url?.startsWith('/hold')) return void res.end('backend\n');
    held.push(res);
    res.on('close', () => (held = held.filter((r) => r !== res)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    held: () => held.length,
    release: () => {
      for (const res of held.splice(0)) res.end('released\n');
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** InFlight is one request through nginx that the backend holds. */
export interface InFlight {
  readonly done: Promise<Reply | Error>;
  settled(): boolean;
}

/** holdRequest sends a request nginx proxies to the holding backend, and waits until the backend holds it. */
export async function holdRequest(port: number, backend: HoldingBackend, host = 'hold.example.com'): Promise<InFlight> {
  const before = backend.held();
  let settled = false;
  const done = get({ host, path: '/hold', port }).then(
    (reply) => ((settled = true), reply),
    (error: Error) => ((settled = true), error),
  );
  const deadline = Date.now() + 5000;
  while (backend.held() <= before) {
    if (settled) throw new Error(`the request to hold was answered at once: ${JSON.stringify(await done)}`);
    if (Date.now() > deadline) throw new Error('the backend never saw the request to hold');
    await new Promise((r) => setTimeout(r, 10));
  }
  return { done, settled: () => settled };
}
