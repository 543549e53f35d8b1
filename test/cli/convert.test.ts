/**
 * `ingress-actors convert` through the built CLI (`npm run build` first), as a user runs it: the objects on stdout,
 * one line per unexpressed annotation on stderr, exit 0 even then; 1 on invalid YAML or a missing path; 2 on a bad
 * flag. The table of conversions itself is test/convert/convert.test.ts.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = new URL('../../', import.meta.url).pathname;
const CLI = join(ROOT, 'bin/ingress-actors');
const CASES = join(ROOT, 'test/convert/cases');
const cli = (args: string[], input?: string) =>
  execa(CLI, ['convert', ...args], { reject: false, timeout: 20_000, ...(input === undefined ? {} : { input }) });

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ia-convert-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('ingress-actors convert', () => {
  it.each(['tls-and-ssl-redirect', 'unexpressible-annotations', 'canary-weight-and-header'])(
    '%s: prints the expected objects, reports each unexpressed annotation, exits 0',
    async (name) => {
      const run = await cli(['--manifests', join(CASES, name, 'input.yaml')]);
      expect(run.exitCode).toBe(0);
      expect(`${run.stdout}\n`).toBe(await readFile(join(CASES, name, 'expected.yaml'), 'utf8'));
      expect(`${run.stderr}\n`).toBe(await readFile(join(CASES, name, 'expected.stderr'), 'utf8'));
    },
  );

  it('reads stdin with -, and names the Gateway and its namespace as the flags say, without a GatewayClass', async () => {
    const input = await readFile(join(CASES, 'paths-and-backends', 'input.yaml'), 'utf8');
    const run = await cli(
      ['--manifests', '-', '--no-gateway-class', '--gateway-name', 'edge', '--gateway-namespace', 'gateways'],
      input,
    );
    expect(run.exitCode).toBe(0);
    const objects = parseAllDocuments(run.stdout).map((d) => d.toJS());
    expect(objects.map((o) => o.kind)).toEqual(['Gateway', 'HTTPRoute', 'HTTPRoute']);
    expect(objects[0].metadata).toEqual({ name: 'edge', namespace: 'gateways' });
    // Routes in shop attach to a Gateway in another namespace: it admits shop by name.
    expect(objects[0].spec.listeners[0].allowedRoutes.namespaces.selector.matchExpressions[0].values).toEqual(['shop']);
    expect(objects[1].spec.parentRefs[0]).toEqual({ name: 'edge', namespace: 'gateways', sectionName: 'http' });
  });

  it('exits 1 naming the file and line of invalid YAML, and a path it cannot read in one line', async () => {
    const bad = join(dir, 'bad.yaml');
    await writeFile(bad, 'apiVersion: v1\nkind: Ingress\nmetadata:\n  name: [unclosed\n');
    const invalid = await cli(['--manifests', bad]);
    expect(invalid.exitCode).toBe(1);
    expect(invalid.stderr).toMatch(new RegExp(`^ingress-actors convert: ${bad}:\\d+: `));
    expect(invalid.stdout).toBe('');
    const missing = await cli(['--manifests', join(dir, 'nowhere.yaml')]);
    expect(missing.exitCode).toBe(1);
    expect(missing.stderr).toBe(`ingress-actors convert: ${join(dir, 'nowhere.yaml')}: no such file or directory`);
  });

  it('exits 2 on a bad flag or name, with the usage', async () => {
    const unknown = await cli(['--frobnicate']);
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr).toContain('Usage: ingress-actors convert');
    const badName = await cli([
      '--manifests',
      join(CASES, 'paths-and-backends', 'input.yaml'),
      '--gateway-name',
      'Bad_Name',
    ]);
    expect(badName.exitCode).toBe(2);
    expect(badName.stderr.split('\n')[0]).toMatch(/^ingress-actors convert: --gateway-name: "Bad_Name" is not a valid/);
    const none = await cli([]);
    expect(none.exitCode).toBe(2);
  });

  it('prints its usage with --help and through help convert', async () => {
    const help = await cli(['--help']);
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toContain('Usage: ingress-actors convert --manifests PATH...');
    const viaHelp = await execa(CLI, ['help', 'convert'], { reject: false });
    expect(viaHelp.stdout).toBe(help.stdout);
  });
});
