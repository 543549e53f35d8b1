/**
 * Issue 18, "logs an operator reads": what `kubectl logs` of the pod shows, read from the built CLI's stdout and
 * stderr as a container runtime hands them on. nginx's access log on stdout (ingress-nginx's upstreaminfo format, then
 * escaped JSON once the ConfigMap asks), nothing of it on stderr; on stderr JSON lines without a repeated key: an
 * Ingress of another class once, each reload with its trigger, the nginx.conf diff at --v=2, an API server it cannot
 * reach with the retry, KUBECONFIG when --kubeconfig is absent, and a port in use ending it with exit 1.
 *
 * The controller runs under `bash -c 'exec > >(exec cat); exec …'`: its stdout is then a pipe, as a container's is. A
 * Node parent's stdio pipes are sockets, which nginx cannot open as /dev/stdout (the controller says so and drops the
 * access log: checked last).
 */
import { chmod, copyFile, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeconfigFor, type ApiServer } from '../../src/dev/api-server/server.js';
import { waitFor } from '../support/cluster.js';
import { kubectlFor, startTestApi, type TestApi } from '../support/kube-api.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { freePort, get, startBackend, type Backend } from '../support/net.js';

const CLI = new URL('../../bin/ingress-actors', import.meta.url).pathname;

/** until is waitFor that hands back what it waited for, found (never null or undefined). */
const until = async <T>(what: string, check: () => T | Promise<T>, timeoutMs: number, pollMs = 20) =>
  (await waitFor(what, check, timeoutMs, pollMs)) as NonNullable<T>;

/** Running is a controller process with what it wrote so far, line by line. */
interface Running {
  readonly child: ResultPromise;
  readonly stdout: string[];
  readonly stderr: string[];
  /** the JSON lines of stderr, parsed (the last words of a failed start are plain text) */
  json(): Record<string, unknown>[];
  /** the JSON lines whose msg is `msg` */
  logged(msg: string | RegExp): Record<string, unknown>[];
}

function lines(stream: NodeJS.ReadableStream | null, into: string[]): void {
  let rest = '';
  stream?.on('data', (chunk: Buffer) => {
    const text = rest + chunk.toString('utf8');
    const parts = text.split('\n');
    rest = parts.pop() ?? '';
    into.push(...parts);
  });
}

/** run starts the controller with its stdout on a pipe (see above), or on Node's socket with `socketStdout`. */
function run(args: string[], env: Record<string, string> = {}, socketStdout = false): Running {
  const command = socketStdout ? CLI : 'bash';
  const argv = socketStdout
    ? args
    : ['--norc', '--noprofile', '-c', 'exec > >(exec cat); exec "$0" "$@"', CLI, ...args];
  const child = execa(command, argv, {
    reject: false,
    stdin: 'ignore',
    // A loaded machine may take a while to stop in order; execa's SIGKILL after 5 s would hide the exit code.
    forceKillAfterDelay: 25_000,
    env: { PATH: `${process.env.PATH}:/usr/sbin`, ...env },
    extendEnv: false,
  });
  const stdout: string[] = [];
  const stderr: string[] = [];
  lines(child.stdout, stdout);
  lines(child.stderr, stderr);
  const json = () =>
    stderr.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);
  return {
    child,
    stdout,
    stderr,
    json,
    logged: (msg) => json().filter((l) => (typeof msg === 'string' ? l.msg === msg : msg.test(String(l.msg)))),
  };
}

/** repeatedKeys lists the keys that occur twice in one object of a JSON text (JSON.parse keeps only the last). */
function repeatedKeys(text: string): string[] {
  const repeated: string[] = [];
  const objects: Set<string>[] = [];
  // Which containers are open: an object expects keys, an array values.
  const open: ('{' | '[')[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      if (expectKey) {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        const keys = objects[objects.length - 1]!;
        if (keys.has(key)) repeated.push(key);
        keys.add(key);
        expectKey = false;
      }
      i = end;
    } else if (c === '{') {
      open.push('{');
      objects.push(new Set());
      expectKey = true;
    } else if (c === '[') open.push('[');
    else if (c === '}') {
      open.pop();
      objects.pop();
    } else if (c === ']') open.pop();
    else if (c === ',') expectKey = open[open.length - 1] === '{';
  }
  return repeated;
}

/** UPSTREAMINFO is one line of ingress-nginx's default log-format-upstream. */
const UPSTREAMINFO = new RegExp(
  String.raw`^127\.0\.0\.1 - - \[[^\]]+\] "GET (\S+) HTTP/1\.1" (\d{3}) \d+ "-" "logs-test" \d+ \d+\.\d{3} ` +
    String.raw`\[([^\]]*)\] \[\] (\S+) (\S+) (\S+) (\S+) ([0-9a-f]{32})$`,
);

let testApi: TestApi;
let api: ApiServer;
let backend: Backend;
let dir: string;

beforeAll(async () => {
  backend = await startBackend('app');
  testApi = await startTestApi('ia-logs-', {
    seed: [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ingress' } },
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'ingress', name: 'config' }, data: {} },
      ingressClass(),
      ...serviceWithEndpoints('app', [{ port: backend.port }]),
      ingress('app', { 'app.logs.test': [{ path: '/', service: 'app' }] }),
      // Another controller's: ignored, and said so once.
      {
        ...ingress('theirs', { 'theirs.logs.test': [{ path: '/', service: 'app' }] }),
        spec: {
          ingressClassName: 'other',
          rules: [{ host: 'theirs.logs.test' }],
        },
      },
      // Served, with one annotation value ignored: a problem said once, in its own words.
      ingress(
        'typo',
        { 'typo.logs.test': [{ path: '/', service: 'app' }] },
        {
          annotations: { 'nginx.ingress.kubernetes.io/proxy-read-timeout': 'soon' },
        },
      ),
    ] as never,
  });
  ({ api, dir } = testApi);
});

afterAll(async () => {
  await testApi?.close();
  await backend?.close();
});

const ports = async () => ({ http: await freePort(), https: await freePort(), healthz: await freePort() });
const portFlags = (p: { http: number; https: number; healthz: number }, name: string) => [
  `--http-port=${p.http}`,
  `--https-port=${p.https}`,
  `--healthz-port=${p.healthz}`,
  '--healthz-host=127.0.0.1',
  `--config-dir=${join(dir, name)}`,
];
const request = (port: number, host: string, path = '/') =>
  get({ host, path, port, headers: { 'user-agent': 'logs-test' } });

/** stop sends SIGTERM and waits for the exit, with everything written: the exit code, or the signal that ended it. */
async function stop(controller: Running): Promise<number | string | undefined> {
  controller.child.kill('SIGTERM');
  const result = await controller.child;
  return result.exitCode ?? result.signal;
}

describe('the controller with its API server in KUBECONFIG, at --v=2', () => {
  let controller: Running;
  let p: Awaited<ReturnType<typeof ports>>;

  beforeAll(async () => {
    p = await ports();
    // As kubectl: KUBECONFIG may list several files; a missing one is skipped.
    const kubeconfig = [join(dir, 'missing-kubeconfig'), join(dir, 'kubeconfig')].join(':');
    controller = run(['controller', '--v=2', '--configmap=ingress/config', ...portFlags(p, 'main')], {
      KUBECONFIG: kubeconfig,
    });
    // Served by every worker: until the reload is confirmed, an old worker may still answer 404.
    await until('the first reload', () => controller.logged('nginx reloaded').length > 0, 30_000, 100);
    await until(
      'the Ingress served',
      async () => (await request(p.http, 'app.logs.test').catch(() => null))?.backend === 'app',
      10_000,
      100,
    );
  }, 40_000);

  afterAll(async () => {
    if (controller) await stop(controller);
  });

  it('used KUBECONFIG, skipping the file that is missing', () => {
    expect(controller.logged('API server from KUBECONFIG')).toEqual([
      expect.objectContaining({ kubeconfig: [join(dir, 'kubeconfig')], server: api.url }),
    ]);
  });

  it('writes one upstreaminfo line per request on stdout, and none of it on stderr', async () => {
    const before = controller.stdout.length;
    expect((await request(p.http, 'app.logs.test', '/ok')).status).toBe(200);
    expect((await request(p.http, 'nobody.logs.test', '/missing')).status).toBe(404);
    const written = await until(
      'two access log lines',
      () => {
        const mine = controller.stdout.slice(before).filter((line) => / "GET \/(ok|missing) /.test(line));
        return mine.length >= 2 ? mine : null;
      },
      10_000,
      20,
    );
    const parsed = written.map((line) => UPSTREAMINFO.exec(line));
    expect(
      parsed.every((m) => m !== null),
      written.join('\n'),
    ).toBe(true);
    // Each line is written when its request ends, in whichever worker: not necessarily in the order sent.
    const ok = parsed.find((m) => m?.[1] === '/ok')!;
    const missing = parsed.find((m) => m?.[1] === '/missing')!;
    // path, status, upstream, upstream address, its length, time, status, request id
    expect(ok.slice(1, 5)).toEqual(['/ok', '200', 'default_app_80', `127.0.0.1:${backend.port}`]);
    expect(ok[7]).toBe('200');
    expect(missing.slice(1, 5)).toEqual(['/missing', '404', '-', '-']);
    expect(controller.stderr.some((line) => line.includes('logs-test'))).toBe(false);
  });

  it('logs each reload at info with its trigger and duration, and the diff of nginx.conf at debug', async () => {
    const [first] = controller.logged('nginx reloaded');
    expect(first).toMatchObject({ level: 30, trigger: 'start' });
    expect(first!.ms).toEqual(expect.any(Number));
    const kubectl = kubectlFor(join(dir, 'kubeconfig'), join(dir, 'kubectl-cache'));
    // a setting no other path has: a new location profile in nginx.conf, so a reload (the host itself is pushed)
    await kubectl.run(
      ['apply', '-f', '-'],
      JSON.stringify(
        ingress(
          'added',
          { 'added.logs.test': [{ path: '/', service: 'app' }] },
          { annotations: { 'nginx.ingress.kubernetes.io/proxy-read-timeout': '91' } },
        ),
      ),
    );
    const reload = await until(
      'the reload it caused',
      () => controller.logged('nginx reloaded').find((l) => l.trigger === 'Ingress default/added changed'),
      10_000,
      20,
    );
    expect(reload.ms).toEqual(expect.any(Number));
    const diff = await until(
      'its diff',
      () => controller.logged('nginx.conf changed').find((l) => String(l.diff).includes('proxy_read_timeout "91s"')),
      10_000,
      20,
    );
    expect(diff.level).toBe(20);
    expect(String(diff.diff)).toMatch(/^@@ -\d+,\d+ \+\d+,\d+ @@$/m);
    expect(String(diff.diff)).toMatch(/^\+.*proxy_read_timeout "91s"/m);
  });

  it('hands the status page its reloads with their triggers, newest first (/status.json)', async () => {
    const reply = await get({ host: 'localhost', path: '/status.json', port: p.healthz });
    const recent = (JSON.parse(reply.body) as { nginx: { recent: Record<string, unknown>[] } }).nginx.recent;
    const reloads = recent.filter((r) => r.kind === 'reload').map((r) => [r.trigger, r.ok]);
    expect(reloads.slice(0, 1)).toEqual([['Ingress default/added changed', true]]);
    expect(reloads.at(-1)).toEqual(['start', true]);
  });

  it('says once that an Ingress of another class is ignored, and each problem once in its own words', async () => {
    // Another sync or two (an Ingress changes) say nothing new of either.
    const kubectl = kubectlFor(join(dir, 'kubeconfig'), join(dir, 'kubectl-cache'));
    const reloads = controller.logged('nginx reloaded').length;
    await kubectl.run(
      ['apply', '-f', '-'],
      JSON.stringify(
        ingress(
          'another',
          { 'another.logs.test': [{ path: '/', service: 'app' }] },
          { annotations: { 'nginx.ingress.kubernetes.io/proxy-read-timeout': '92' } },
        ),
      ),
    );
    await until(
      'that reload',
      () =>
        controller
          .logged('nginx reloaded')
          .slice(reloads)
          .some((l) => l.trigger === 'Ingress default/another changed'),
      10_000,
      20,
    );
    expect(controller.logged('Ingress ignored: it is not of our class')).toEqual([
      expect.objectContaining({
        level: 30,
        ingress: 'default/theirs',
        reason: 'spec.ingressClassName "other": IngressClass not found',
      }),
    ]);
    const problem = controller.json().filter((l) => String(l.msg).startsWith('default/typo: '));
    expect(problem).toEqual([
      expect.objectContaining({
        level: 40,
        kind: 'Ingress',
        object: 'default/typo',
        field: 'metadata.annotations.nginx.ingress.kubernetes.io/proxy-read-timeout',
      }),
    ]);
    expect(String(problem[0]!.msg)).toMatch(/; ignored, the default applies$/);
    expect(controller.json().some((l) => /left out/.test(String(l.msg)))).toBe(false);
  });

  it('switches the access log to escaped JSON when the ConfigMap asks, with a reload naming the ConfigMap', async () => {
    const kubectl = kubectlFor(join(dir, 'kubeconfig'), join(dir, 'kubectl-cache'));
    const format =
      '{"uri": "$request_uri", "status": $status, "agent": "$http_user_agent", "upstream": "$proxy_upstream_name"}';
    await kubectl.run(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { namespace: 'ingress', name: 'config' },
        data: { 'log-format-escape-json': 'true', 'log-format-upstream': format },
      }),
    );
    await until(
      'the reload',
      () => controller.logged('nginx reloaded').find((l) => l.trigger === 'ConfigMap ingress/config changed'),
      10_000,
      20,
    );
    const before = controller.stdout.length;
    // A quote and a backslash in the request: escape=json keeps the line JSON.
    await get({ host: 'app.logs.test', path: '/json', port: p.http, headers: { 'user-agent': 'logs-test "q" \\b' } });
    const line = await until(
      'its line',
      () => controller.stdout.slice(before).find((l) => l.includes('/json')),
      10_000,
      20,
    );
    expect(JSON.parse(line)).toEqual({
      uri: '/json',
      status: 200,
      agent: 'logs-test "q" \\b',
      upstream: 'default_app_80',
    });
  });

  it('lets nothing grow in the config folder: no access or error log file', async () => {
    const files = await readdir(join(dir, 'main'), { recursive: true });
    expect(files.filter((file) => /log/.test(file))).toEqual(['logs']);
  });

  it('writes only JSON lines on stderr, none with a key twice', () => {
    expect(controller.stderr.length).toBeGreaterThan(10);
    for (const line of controller.stderr) {
      expect(() => JSON.parse(line), line).not.toThrow();
      expect(repeatedKeys(line), line).toEqual([]);
    }
    // the repeat checker itself
    expect(repeatedKeys('{"pid":1,"a":{"pid":2},"b":[{"x":1},{"x":2}],"pid":3}')).toEqual(['pid']);
  });
});

it('warns when it cannot reach the API server, with the error, the server and when it retries', async () => {
  const closed = await freePort();
  const kubeconfig = join(dir, 'unreachable-kubeconfig');
  await writeFile(kubeconfig, kubeconfigFor(`https://127.0.0.1:${closed}`, api.caPem, api.token));
  const p = await ports();
  const controller = run(['controller', ...portFlags(p, 'unreachable')], { KUBECONFIG: kubeconfig });
  try {
    const warning = await until(
      'the warning',
      () => controller.logged('cannot list from the API server (before the first sync); retrying').at(0),
      20_000,
      50,
    );
    expect(warning).toMatchObject({ level: 40, server: `https://127.0.0.1:${closed}` });
    // The cause, not only client-node's "fetch failed".
    expect(String(warning.error)).toContain(`ECONNREFUSED 127.0.0.1:${closed}`);
    expect(warning.retryInMs).toEqual(expect.any(Number));
    expect(new Date(String(warning.retryAt)).toISOString()).toBe(warning.retryAt);
  } finally {
    expect(await stop(controller)).toBe(0);
  }
}, 40_000);

it('exits 1 naming the port and its flag when the HTTP port is taken', async () => {
  const p = await ports();
  const squatter: Server = createServer();
  await new Promise<void>((resolve) => squatter.listen(p.http, '127.0.0.1', resolve));
  try {
    const controller = run(['controller', `--kubeconfig=${join(dir, 'kubeconfig')}`, ...portFlags(p, 'taken')]);
    const result = await controller.child;
    expect(result.exitCode).toBe(1);
    expect(controller.stderr.find((line) => line.startsWith('ingress-actors: '))).toMatch(
      new RegExp(
        `^ingress-actors: nginx: nginx cannot listen on \\S+:${p.http}: port ${p.http} \\(--http-port\\) is in use`,
      ),
    );
    expect(controller.logged('nginx master started')).toHaveLength(1);
  } finally {
    await new Promise((resolve) => squatter.close(resolve));
  }
}, 40_000);

it('says so when its stdout is a socket nginx cannot open, and still serves', async () => {
  const p = await ports();
  const controller = run(
    ['controller', `--kubeconfig=${join(dir, 'kubeconfig')}`, ...portFlags(p, 'socket')],
    {},
    true,
  );
  try {
    await until(
      'the Ingress served',
      async () => (await request(p.http, 'app.logs.test').catch(() => null))?.backend === 'app',
      30_000,
      100,
    );
    expect(controller.logged(/^stdout is a socket, which nginx cannot open as \/dev\/stdout/)).toHaveLength(1);
    expect(controller.stdout.filter((line) => line.includes('logs-test'))).toEqual([]);
  } finally {
    expect(await stop(controller)).toBe(0);
  }
}, 40_000);

it.each([
  [
    { KUBECONFIG: '/nonexistent/a:/nonexistent/b' },
    'ingress-actors controller: KUBECONFIG names no file that exists (/nonexistent/a:/nonexistent/b): give ' +
      '--kubeconfig, or fix or unset KUBECONFIG',
    2,
  ],
  [
    {},
    'ingress-actors controller: no API server to watch: give --kubeconfig or set KUBECONFIG, or run in a pod ' +
      '(KUBERNETES_SERVICE_HOST is unset)',
    2,
  ],
  [{ KUBECONFIG: '/dev/null' }, 'ingress-actors controller: /dev/null is not a kubeconfig: expected a document', 1],
])('says in one line what is wrong with where the API server comes from (%j)', async (env, line, code) => {
  const p = await ports();
  const controller = run(['controller', ...portFlags(p, 'no-api')], env);
  const result = await controller.child;
  expect(result.exitCode).toBe(code);
  expect(controller.stderr.filter((l) => !l.startsWith('{'))[0]).toContain(line);
});

it('exits 1 naming the binary when nginx died and its binary is gone, instead of restarting it forever', async () => {
  const binary = join(dir, 'bin', 'nginx');
  await mkdir(join(dir, 'bin'));
  await copyFile('/usr/sbin/nginx', binary);
  await chmod(binary, 0o755);
  const p = await ports();
  const controller = run([
    'controller',
    `--kubeconfig=${join(dir, 'kubeconfig')}`,
    `--nginx-binary=${binary}`,
    '--drain-timeout=1s',
    ...portFlags(p, 'binary-gone'),
  ]);
  await until('the first reload', () => controller.logged('nginx reloaded').length > 0, 30_000, 100);
  await rm(binary);
  process.kill(Number(controller.logged('nginx master started')[0]!.nginxPid), 'SIGKILL');
  const result = await controller.child;
  expect(result.exitCode).toBe(1);
  expect(controller.stderr.find((line) => line.startsWith('ingress-actors: '))).toBe(
    `ingress-actors: nginx: nginx binary ${JSON.stringify(binary)} was not found (ENOENT): give its path with ` +
      '--nginx-binary (or NGINX_BINARY), or put nginx on the PATH',
  );
  expect(controller.logged('nginx cannot be run')[0]).toMatchObject({ level: 40 });
}, 60_000);
