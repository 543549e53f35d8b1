import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const CLI = new URL('../../bin/ingress-actors', import.meta.url).pathname;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ia-cli-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('ingress-actors render', () => {
  it('exits 1 naming the file and line of invalid YAML', async () => {
    const file = join(dir, 'bad.yaml');
    await writeFile(file, 'apiVersion: v1\nkind: Service\nmetadata:\n  name: [unclosed\n');
    const result = await execa(CLI, ['render', '--manifests', file], { reject: false });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(new RegExp(`${file}:\\d+: `));
    expect(result.stdout).toBe('');
  });

  it('reads folders and multi-document files, and prints problems on stderr', async () => {
    const folder = join(dir, 'manifests');
    await execa('mkdir', ['-p', join(folder, 'nested')]);
    await writeFile(
      join(folder, 'a.yaml'),
      'kind: IngressClass\napiVersion: networking.k8s.io/v1\nmetadata: {name: nginx}\nspec: {controller: ' +
        'k8s.io/ingress-nginx}\n---\n',
    );
    await writeFile(
      join(folder, 'nested', 'b.yml'),
      'kind: Ingress\napiVersion: networking.k8s.io/v1\nmetadata: {name: web}\nspec:\n  ingressClassName: nginx\n  ' +
        'rules:\n  - host: "bad host"\n  - host: good.example.com\n    http: {paths: [{path: /, pathType: ' +
        'Prefix, backend: {service: {name: web, port: {number: 80}}}}]}\n',
    );
    const result = await execa(CLI, ['render', '--manifests', folder], { reject: false });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('server_name "good.example.com";');
    expect(result.stderr.split('\n')).toEqual([
      'default/web: spec.rules[0].host: "bad host" is not a valid host (lower-case RFC 1123 name, optionally ' +
        "starting with '*.'); rule left out",
      'default/web: spec.rules[1].http.paths[0].backend.service.name: Service default/web not found; answering 503',
    ]);
  });

  it('is byte-stable: the same manifests render the same text', async () => {
    const args = ['render', '--manifests', join(dir, 'manifests')];
    const [a, b] = await Promise.all([execa(CLI, args), execa(CLI, args)]);
    expect(a.stdout).toBe(b.stdout);
  });

  it('renders as the controller does with --dynamic-backends=true: the shared server, the tables, where hosts are served', async () => {
    const file = join(dir, 'shared.yaml');
    await writeFile(
      file,
      'kind: IngressClass\napiVersion: networking.k8s.io/v1\nmetadata: {name: nginx}\nspec: {controller: ' +
        'k8s.io/ingress-nginx}\n---\nkind: Ingress\napiVersion: networking.k8s.io/v1\nmetadata: {name: web}\nspec:\n' +
        '  ingressClassName: nginx\n  rules:\n  - host: shared.example.com\n    http: {paths: [{path: /, pathType: ' +
        'Prefix, backend: {service: {name: web, port: {number: 80}}}}]}\n',
    );
    const out = join(dir, 'shared-out');
    const result = await execa(CLI, ['render', '--manifests', file, '--out', out, '--dynamic-backends=true'], {
      reject: false,
    });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout).toContain('ingress_router").route(true)');
    expect(result.stdout).not.toContain('shared.example.com');
    expect(result.stderr).toContain(
      'routes as data: 2 hosts served by the shared server (pushed), 0 by their own server',
    );
    const routes = JSON.parse(await readFile(join(out, 'tables', 'ingress-routes.json'), 'utf8'));
    expect(routes.hosts.map((h: { host: string }) => h.host).sort()).toEqual(['_', 'shared.example.com']);
    const rendered = await execa(CLI, [
      'render',
      '--manifests',
      file,
      '--dynamic-backends=true',
      '--routes-as-data=false',
      '--config-dir',
      out,
    ]);
    expect(rendered.stdout).toContain('server_name "shared.example.com";');
  });

  it('rejects a bad port flag with exit 2', async () => {
    const result = await execa(CLI, ['render', '--manifests', dir, '--http-port', '99999'], { reject: false });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('--http-port must be a port number');
  });

  it('exits 2 on an unknown command', async () => {
    const result = await execa(CLI, ['frobnicate'], { reject: false });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('unknown command "frobnicate"');
  });
});
