/**
 * docs/migrating.md's commands, run as written: every ```sh block under a heading marked *(tested)* goes to bash
 * (`set -e`), with kubectl pointed at the test API server (KUBECONFIG) and `ingress-actors` on the PATH, in a scratch
 * folder. The cluster holds what ingress-nginx users have: the class `nginx`, the release's ConfigMap, and an
 * Ingress with one annotation this controller cannot read and one security annotation it refuses.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer, type ApiServer } from '../../src/dev/api-server/server.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const DOC = await readFile(join(ROOT, 'docs/migrating.md'), 'utf8');

/** testedBlocks gives, per heading marked *(tested)*, its ```sh blocks. */
function testedBlocks(markdown: string): { heading: string; blocks: string[] }[] {
  const sections = markdown.split(/^(?=#{2,3} )/m);
  return sections
    .filter((section) => /^#{2,3} .*\*\(tested\)\*/.test(section))
    .map((section) => ({
      heading: section.split('\n')[0]!.replace(/^#+ /, ''),
      blocks: [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!),
    }));
}

let api: ApiServer;
let dir: string;

beforeAll(async () => {
  api = await startApiServer({
    seed: [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } },
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ingress-nginx' } },
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { namespace: 'ingress-nginx', name: 'ingress-nginx-controller' },
        data: { 'use-forwarded-headers': 'true' },
      },
      ingressClass(),
      ...serviceWithEndpoints('web', [{ port: 8080 }], 'shop'),
      ingress(
        'web',
        { 'shop.example.com': [{ path: '/', service: 'web' }] },
        {
          namespace: 'shop',
          annotations: {
            'nginx.ingress.kubernetes.io/limit-rps': 'ten',
            'nginx.ingress.kubernetes.io/auth-tls-match-cn': 'CN=client',
          },
        },
      ),
    ] as never,
  });
  dir = await mkdtemp(join(tmpdir(), 'ia-migrating-'));
  await api.writeKubeconfig(join(dir, 'kubeconfig'));
});

afterAll(async () => {
  await api?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** run gives a block to bash as a user would paste it. */
const run = (block: string) =>
  execa('bash', ['-e', '-c', block], {
    cwd: dir,
    reject: false,
    timeout: 60_000,
    env: {
      KUBECONFIG: join(dir, 'kubeconfig'),
      PATH: `${join(ROOT, 'bin')}:${process.env.PATH}:/usr/sbin`,
      HOME: dir,
    },
  });

const sections = testedBlocks(DOC);

describe('docs/migrating.md', () => {
  it('marks the sections its test runs', () => {
    expect(sections.map((s) => s.heading)).toEqual([
      '1. Ask first: what would this controller make of your Ingresses? *(tested)*',
      'B. Run beside ingress-nginx, then move Ingresses one by one *(tested)*',
    ]);
  });

  it("1: render says what it makes of the cluster's Ingresses, and the file with the Secrets is gone", async () => {
    const [block] = sections[0]!.blocks;
    const result = await run(block!);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stderr).toContain(
      'shop/web: metadata.annotations.nginx.ingress.kubernetes.io/limit-rps: "ten" is not a whole number',
    );
    expect(result.stderr).toMatch(
      /shop\/web: metadata\.annotations\.nginx\.ingress\.kubernetes\.io\/auth-tls-match-cn: .*its locations answer 503/,
    );
    expect(result.stdout).toBe('');
    const left = await execa('ls', ['-A', dir]);
    expect(left.stdout.split('\n')).not.toContain('cluster.yaml');
  });

  it('B: an Ingress moves to the new class and back', async () => {
    const [to, back] = sections[1]!.blocks;
    const className = async () =>
      (
        await execa('kubectl', ['get', 'ingress', 'web', '-n', 'shop', '-o', 'jsonpath={.spec.ingressClassName}'], {
          env: { KUBECONFIG: join(dir, 'kubeconfig'), HOME: dir },
        })
      ).stdout;
    expect((await run(to!)).exitCode).toBe(0);
    expect(await className()).toBe('ingress-actors');
    expect((await run(back!)).exitCode).toBe(0);
    expect(await className()).toBe('nginx');
  });
});
