import { execa, type ResultPromise } from 'execa';
import { nginxBinary } from '../../src/nginx/binary.js';
import { waitForPort } from './net.js';

/** RunningNginx is a real nginx master started by a test. */
export interface RunningNginx {
  readonly process: ResultPromise;
  stop(): Promise<void>;
}

/** startNginx runs `nginx -g 'daemon off;'` on a config folder and waits until it listens on `port`. */
export async function startNginx(dir: string, port: number): Promise<RunningNginx> {
  const child = execa(nginxBinary(), ['-p', `${dir}/`, '-c', `${dir}/nginx.conf`, '-g', 'daemon off;'], {
    reject: false,
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = child.then((r) => new Error(`nginx exited (${r.exitCode ?? r.signal}): ${stderr}`));
  await Promise.race([waitForPort(port), exited.then((e) => Promise.reject(e))]);
  return {
    process: child,
    async stop() {
      // The whole process group, so no worker outlives the test.
      if (child.pid) {
        try {
          process.kill(-child.pid, 'SIGTERM');
        } catch {
          /* already gone */
        }
      }
      await child;
    },
  };
}
