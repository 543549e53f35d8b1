/**
 * Issue 15, "failures a user can act on": the built CLI (`./bin/ingress-actors`, run as a user
 * runs it) exits with a code and a line that say what to fix, never a stack or Node's parseArgs
 * text. Each case names its finding.
 */
import { execa } from 'execa';
import { createServer, type Server } from 'node:net';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/net.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const CLI = join(ROOT, 'bin/ingress-actors');
const cli = (args: string[], options: { input?: string; timeout?: number } = {}) =>
  execa(CLI, args, {
    reject: false,
    timeout: options.timeout ?? 20_000,
    cwd: ROOT,
    env: { PATH: `${process.env.PATH}:/usr/sbin` },
    ...(options.input === undefined ? {} : { input: options.input }),
  });
const NO_STACK = /\n\s+at /;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ia-cli-failures-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const USAGE = {
  controller: 'Usage: ingress-actors controller',
  render: 'Usage: ingress-actors render',
  demo: 'Usage: ingress-actors demo',
  statecharts: 'Usage: ingress-actors statecharts',
};

describe('flags', () => {
  it.each(Object.entries(USAGE))(
    'finding "unknown flags": %s --frobnicate prints its usage and exits 2, not parseArgs text',
    async (command, usage) => {
      const run = await cli([command, '--frobnicate']);
      expect(run.exitCode).toBe(2);
      expect(run.stderr.split('\n')[0]).toBe(`ingress-actors ${command}: unknown flag --frobnicate`);
      expect(run.stderr).toContain(usage);
      expect(run.stderr).not.toMatch(/Unknown option|To specify a positional/);
    },
  );

  it('finding "unknown flags": a flag without its value says so, with the usage', async () => {
    const run = await cli(['render', '--manifests']);
    expect(run.exitCode).toBe(2);
    expect(run.stderr.split('\n')[0]).toBe('ingress-actors render: --manifests needs a value');
    expect(run.stderr).toContain(USAGE.render);
  });

  it.each(Object.entries(USAGE))(
    'finding "help <cmd>": help %s prints its usage and exits 0',
    async (command, usage) => {
      const run = await cli(['help', command]);
      expect({ code: run.exitCode, first: run.stdout.split('\n')[0]!.slice(0, usage.length) }).toEqual({
        code: 0,
        first: usage,
      });
    },
  );

  it('finding "help <cmd>": help of an unknown command exits 2', async () => {
    const run = await cli(['help', 'frob']);
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toContain('ingress-actors help: unknown command "frob"');
  });
});

describe('listen ports in use', () => {
  let kubeconfig: string;
  let taken: Server;
  let port: number;
  beforeAll(async () => {
    kubeconfig = join(dir, 'kubeconfig');
    await writeFile(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'current-context: c',
        'clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]',
        'users: [{name: u, user: {}}]',
        'contexts: [{name: c, context: {cluster: c, user: u}}]',
        '',
      ].join('\n'),
    );
    port = await freePort();
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(port, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => taken.close(() => resolve())));

  const controller = async (...flags: string[]) => {
    const conf = await mkdtemp(join(dir, 'conf-'));
    await chmod(conf, 0o700);
    const [http, https, healthz] = [await freePort(), await freePort(), await freePort()];
    const withHealthz = flags.includes('--healthz-port') ? [] : ['--healthz-port', String(healthz)];
    return cli([
      'controller',
      '--kubeconfig',
      kubeconfig,
      '--config-dir',
      conf,
      '--http-port',
      String(http),
      '--https-port',
      String(https),
      '--log-level',
      'silent',
      ...withHealthz,
      ...flags,
    ]);
  };

  it(
    'finding "healthz port in use": the controller exits 1 ' +
      'naming --healthz-port and the address, before starting nginx',
    async () => {
      const run = await controller('--healthz-port', String(port), '--healthz-host', '127.0.0.1');
      expect({ code: run.exitCode, stderr: run.stderr }).toEqual({
        code: 1,
        stderr: `ingress-actors controller: --healthz-port ${port}: 127.0.0.1:${port}: the port is already in use`,
      });
    },
  );

  it('finding "healthz port in use": on all addresses (the default) too', async () => {
    const run = await controller('--healthz-port', String(port));
    expect(run.exitCode).toBe(1);
    expect(run.stderr).toMatch(
      new RegExp(`^ingress-actors controller: --healthz-port ${port}: .*:${port}: the port is already in use$`),
    );
  });

  it(
    'finding "inspector port in use": the controller exits ' + '1 naming --inspect-port, not a raw EADDRINUSE',
    async () => {
      const run = await controller('--inspect-port', String(port));
      expect({ code: run.exitCode, stderr: run.stderr }).toEqual({
        code: 1,
        stderr: `ingress-actors controller: --inspect-port ${port}: 127.0.0.1:${port}: the port is already in use`,
      });
    },
  );

  it(
    'finding "inspector port": the inspector on the HTTP port ' + 'is refused at once (exit 2, both flags named)',
    async () => {
      const run = await cli(['controller', '--inspect', '--http-port', '8080']);
      expect({ code: run.exitCode, stderr: run.stderr }).toEqual({
        code: 2,
        stderr: 'ingress-actors controller: --inspect-port and --http-port are both 8080; give them different ports',
      });
    },
  );
});

describe('render', () => {
  const ingressClass =
    'apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: ' +
    '{name: nginx}\nspec: {controller: k8s.io/ingress-nginx}\n';
  const ingress = (name: string, spec: string, annotations = '{}') =>
    `apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: ${name}, annotations: ${annotations}}\nspec: ` +
    `${spec}\n`;
  const service = (name: string) =>
    `apiVersion: v1\nkind: Service\nmetadata: {name: ${name}}\nspec: {ports: [{port: 80}]}\n`;
  const paths = (svc: string, ...p: string[]) =>
    `{ingressClassName: nginx, rules: [{host: ${svc}.example.com, http: {paths: [` +
    p.map((x) => `{path: ${x}, pathType: Prefix, backend: {service: {name: ${svc}, port: {number: 80}}}}`).join(', ') +
    ']}}]}';

  it('finding "render stdin": --manifests - reads the manifests from stdin (helm template ... | render)', async () => {
    const run = await cli(['render', '--manifests', '-'], {
      input: [ingressClass, service('web'), ingress('web', paths('web', '/'))].join('---\n'),
    });
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain('server_name "web.example.com";');
  });

  it('finding "render missing file": a missing manifest is one line, exit 1', async () => {
    const missing = join(dir, 'nope.yaml');
    const run = await cli(['render', '--manifests', missing]);
    expect({ code: run.exitCode, stderr: run.stderr }).toEqual({
      code: 1,
      stderr: `ingress-actors render: ${missing}: no such file or directory`,
    });
  });

  it('finding "render ignored Ingresses": each Ingress left out is listed with its reason', async () => {
    const other =
      'apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: ' +
      '{name: other}\nspec: {controller: example.com/other}\n';
    const run = await cli(['render', '--manifests', '-'], {
      input: [
        ingressClass,
        other,
        ingress('unknown-class', '{ingressClassName: missing, rules: [{host: a.example.com}]}'),
        ingress('other-controller', '{ingressClassName: other, rules: [{host: b.example.com}]}'),
        ingress('legacy-other', '{rules: [{host: c.example.com}]}', '{kubernetes.io/ingress.class: traefik}'),
        ingress('no-class', '{rules: [{host: d.example.com}]}'),
      ].join('---\n'),
    });
    expect(run.exitCode).toBe(0);
    expect(run.stderr.split('\n')).toEqual([
      'default/unknown-class: ignored: spec.ingressClassName "missing": IngressClass not found',
      'default/other-controller: ignored: IngressClass "other" is ' +
        'another controller\'s ("example.com/other", not "k8s.io/ingress-nginx")',
      'default/legacy-other: ignored: kubernetes.io/ingress.class "traefik" is another class (not "nginx")',
      'default/no-class: ignored: no class (neither spec.ingressClassName nor the kubernetes.io/ingress.class ' +
        'annotation; --watch-ingress-without-class serves it)',
    ]);
  });

  it('finding "render --configmap": a --configmap naming nothing in the manifests says so', async () => {
    const run = await cli(['render', '--manifests', '-', '--configmap', 'ingress-nginx/controller'], {
      input: ingressClass,
    });
    expect(run.exitCode).toBe(0);
    expect(run.stderr).toBe(
      '--configmap ingress-nginx/controller: no such ConfigMap in the manifests; the defaults apply',
    );
  });

  it('finding "render EndpointSlices": backends without EndpointSlices are one line, not one per path', async () => {
    const run = await cli(['render', '--manifests', '-'], {
      input: [
        ingressClass,
        service('web'),
        service('api'),
        ingress('web', paths('web', '/a', '/b', '/c')),
        ingress('api', paths('api', '/')),
      ].join('---\n'),
    });
    expect(run.exitCode).toBe(0);
    expect(run.stderr).toBe(
      '4 backends of 2 Services without EndpointSlices in the manifests (as in helm template output) answer 503: ' +
        'default/api:80, default/web:80',
    );
  });

  it('finding "render --out": a refused --out DIR (not private) is one line, exit 2, no stack', async () => {
    const open = join(dir, 'open');
    await mkdir(open);
    await chmod(open, 0o777);
    const run = await cli(['render', '--manifests', '-', '--out', open], { input: ingressClass });
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toBe(
      `ingress-actors render: ${open} is writable by everyone (mode 0777); remove it or choose another folder`,
    );
    expect(run.stderr).not.toMatch(NO_STACK);
  });
});
