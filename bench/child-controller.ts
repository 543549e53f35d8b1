/**
 * The controller in its own process, as in production: the test API server stays in the
 * benchmark's process, `bin/ingress-actors controller` runs as a child with a kubeconfig that
 * points to it, and the child's JSON log lines (pino, on stderr) are collected as they come.
 */
import { spawn } from 'node:child_process';
import { Agent, request as httpsRequest } from 'node:https';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { startApiServer } from '../src/dev/api-server/server.js';
import { PROJECT_ROOT } from '../src/project-root.js';
import { mergePatcher } from '../test/support/cluster.js';
import { testControllerFlags } from '../test/support/controller-flags.js';

/** LogLine is one pino line of the controller: `time` is epoch milliseconds. */
export interface LogLine {
  readonly msg: string;
  readonly time: number;
  readonly [key: string]: unknown;
}

/** ChildController is the running child, its API server and a way to change objects fast. */
export interface ChildController {
  readonly pid: number;
  readonly httpPort: number;
  readonly httpsPort: number;
  /** its --healthz-port (/metrics) */
  readonly healthzPort: number;
  /** the controller's --config-dir: nginx.conf and nginx's prefix */
  readonly configDir: string;
  /** every JSON line the controller logged so far, in order */
  readonly logs: readonly LogLine[];
  /** rawPatch sends one JSON merge patch over a keep-alive HTTPS connection: fast enough for bursts */
  rawPatch(path: string, body: object): Promise<number>;
  /** send makes one API request as kubectl would (POST to create, DELETE), over a keep-alive HTTPS connection */
  send(method: 'POST' | 'DELETE', path: string, body?: object): Promise<number>;
  close(): Promise<void>;
}

/**
 * startChildController seeds a test API server with `seed` and runs the controller on it with `flags`; `root` is the
 * checkout whose build runs (another one's: a benchmark comparing two versions side by side).
 */
export async function startChildController(
  seed: object[],
  flags: string[],
  root = PROJECT_ROOT,
): Promise<ChildController> {
  const api = await startApiServer({ seed: seed as never });
  const dir = await mkdtemp(join(tmpdir(), 'ia-bench-'));
  const kubeconfig = join(dir, 'kubeconfig');
  await api.writeKubeconfig(kubeconfig);
  const configDir = join(dir, 'nginx');
  const first = await testControllerFlags(kubeconfig, configDir);
  const child = spawn(
    join(root, 'bin/ingress-actors'),
    ['controller', ...first.flags, '--drain-timeout', '1', '--shutdown-timeout', '5', ...flags],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let closing = false;
  const logs: LogLine[] = [];
  const other: string[] = [];
  createInterface({ input: child.stderr! }).on('line', (line) => {
    try {
      logs.push(JSON.parse(line) as LogLine);
    } catch {
      other.push(line); // a crash's stack, say: shown if the child dies
    }
  });
  void exited.then((code) => {
    if (!closing) console.error(`the controller exited early (code ${code}):\n${other.join('\n')}`);
  });
  const patcher = mergePatcher(api);
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  const send = (method: 'POST' | 'DELETE', path: string, body?: object) =>
    new Promise<number>((resolve, reject) => {
      const headers = { authorization: `Bearer ${api.token}`, 'content-type': 'application/json' };
      const req = httpsRequest(
        { host: '127.0.0.1', port: api.port, path, method, agent, ca: api.caPem, headers },
        (res) => res.resume().on('end', () => resolve(res.statusCode ?? 0)),
      );
      req.on('error', reject);
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });
  return {
    pid: child.pid!,
    httpPort: first.httpPort,
    httpsPort: first.httpsPort,
    healthzPort: first.healthzPort,
    configDir,
    logs,
    rawPatch: patcher.patch,
    send,
    close: async () => {
      closing = true;
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      // The controller quits nginx and exits within its --shutdown-timeout; kill it if it hangs.
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
      patcher.close();
      agent.destroy();
      await api.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
