/**
 * Helpers for tests that talk to the test API server through real clients: a kubectl runner
 * bound to one kubeconfig (with its own discovery cache), a bounded wait, the Status of a failed
 * client-node call, a small Ingress, and the test API server with its kubeconfig in a folder of its own.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiException, type V1Ingress } from '@kubernetes/client-node';
import { execa, type ResultPromise } from 'execa';
import { type ApiServer, type ApiServerOptions, startApiServer } from '../../src/dev/api-server/server.js';
import { expect } from 'vitest';
import { waitFor as pollUntil } from './wait.js';

/** KUBECTL is the kubectl binary the tests drive (the machine's, not a stub). */
export const KUBECTL = process.env.KUBECTL ?? '/usr/bin/kubectl';

/** Kubectl runs kubectl against one kubeconfig; `run` rejects on a non-zero exit, `try` does not. */
export interface Kubectl {
  run(args: string[], input?: string): Promise<{ stdout: string; stderr: string }>;
  try(args: string[], input?: string): Promise<{ stdout: string; stderr: string; exitCode: number }>;
  spawn(args: string[]): ResultPromise;
}

/** kubectlFor binds kubectl to a kubeconfig file and a private cache directory. */
export function kubectlFor(kubeconfig: string, cacheDir: string): Kubectl {
  const base = (args: string[]): string[] => ['--kubeconfig', kubeconfig, '--cache-dir', cacheDir, ...args];
  return {
    run: async (args, input) => {
      const result = await execa(KUBECTL, base(args), { timeout: 20_000, ...(input === undefined ? {} : { input }) });
      return { stdout: result.stdout, stderr: result.stderr };
    },
    try: async (args, input) => {
      const result = await execa(KUBECTL, base(args), {
        timeout: 20_000,
        reject: false,
        ...(input === undefined ? {} : { input }),
      });
      return { stdout: String(result.stdout), stderr: String(result.stderr), exitCode: result.exitCode ?? -1 };
    },
    spawn: (args) => execa(KUBECTL, base(args), { timeout: 20_000, reject: false, buffer: false }),
  };
}

/** waitFor is the shared poller (./wait.ts) with this file's habits: 5 s, polled every 20 ms. */
export function waitFor<T>(what: string, check: () => T | Promise<T>, ms = 5_000): Promise<T> {
  return pollUntil(what, check, ms, 20);
}

/** statusOf reads the code and the Status reason of a client-node ApiException. */
export function statusOf(error: unknown): { code: number; reason?: string; kind?: string } {
  expect(error).toBeInstanceOf(ApiException);
  const e = error as ApiException<unknown>;
  const body = (typeof e.body === 'string' ? JSON.parse(e.body) : (e.body ?? {})) as { reason?: string; kind?: string };
  return { code: e.code, reason: body.reason, kind: body.kind };
}

/** failure awaits a call that must fail and returns its code and Status reason. */
export async function failure(promise: Promise<unknown>): Promise<{ code: number; reason?: string; kind?: string }> {
  try {
    await promise;
  } catch (error) {
    return statusOf(error);
  }
  throw new Error('expected the request to fail');
}

/** testIngress is a one-rule Ingress of class nginx to the Service `web`, port 80. */
export function testIngress(name: string, namespace: string, host: string): V1Ingress {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name, namespace },
    spec: {
      ingressClassName: 'nginx',
      rules: [
        {
          host,
          http: {
            paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }],
          },
        },
      ],
    },
  };
}

/** TestApi is a running test API server and a private folder (`dir`) that holds its `kubeconfig`. */
export interface TestApi {
  readonly api: ApiServer;
  readonly dir: string;
  readonly kubeconfig: string;
  /** stops the server and removes the folder */
  close(): Promise<void>;
}

/** startTestApi starts the test API server and writes its kubeconfig into a new folder named from `prefix`. */
export async function startTestApi(prefix: string, options: ApiServerOptions = {}): Promise<TestApi> {
  const api = await startApiServer(options);
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const kubeconfig = join(dir, 'kubeconfig');
  await api.writeKubeconfig(kubeconfig);
  return {
    api,
    dir,
    kubeconfig,
    close: async () => {
      await api.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
