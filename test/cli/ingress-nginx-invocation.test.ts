/**
 * The built CLI invoked as ingress-nginx's image is (issue 19, flags): its Helm chart's args start with
 * `/nginx-ingress-controller`, flags alone mean the controller, `--version` answers as ingress-nginx lays it out,
 * klog's `--v` sets the log level, and a flag this controller cannot honour as given exits 1 naming it.
 */
import { execa } from 'execa';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { expandEnvRefs } from '../../src/cli/ingress-nginx-flags.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const CLI = join(ROOT, 'bin/ingress-actors');
const cli = (args: string[]) =>
  execa(CLI, args, { reject: false, timeout: 20_000, cwd: ROOT, env: { PATH: `${process.env.PATH}:/usr/sbin` } });

describe('ingress-nginx-style invocation', () => {
  it.each([[['--version']], [['/nginx-ingress-controller', '--version']], [['controller', '--version']]])(
    '%j prints the release and the nginx version, exit 0',
    async (args) => {
      const run = await cli(args);
      expect(run.exitCode).toBe(0);
      expect(run.stdout).toMatch(
        /^-{79}\ningress-actors: an Ingress controller for NGINX\n {2}Release: {7}v\d+\.\d+\.\d+\n/,
      );
      // (execa drops the final newline)
      expect(run.stdout).toMatch(/ {2}nginx version: nginx\/\d+\.\d+\.\d+\n-{79}$/);
    },
  );

  it('exits 1, naming the flag, for a value it would have to ignore by serving more than asked', async () => {
    const run = await cli(['/nginx-ingress-controller', '--annotations-prefix=example.com']);
    expect(run.exitCode).toBe(1);
    expect(run.stderr).toContain('--annotations-prefix=example.com is not supported');
  });

  it('still exits 2 for a flag ingress-nginx does not have either', async () => {
    const run = await cli(['/nginx-ingress-controller', '--frobnicate']);
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toContain('unknown flag --frobnicate');
  });

  it('reads --v as the log level, and refuses one that is not a number', async () => {
    const bad = await cli(['--v=loud', 'render', '--help']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('--v must be a klog verbosity');
    // render logs "model built" at debug: shown from --v=2 on, as ingress-nginx's details are
    const quiet = await cli(['render', '--v=1', '--manifests', join(ROOT, 'examples')]);
    expect(quiet.stderr).not.toContain('model built');
    const debug = await cli(['render', '--v=2', '--manifests', join(ROOT, 'examples')]);
    expect(debug.exitCode).toBe(0);
    expect(debug.stderr).toContain('"level":20');
    expect(debug.stderr).toContain('model built');
  });

  it('leaves an unset $(VAR) as written, so the error names it', () => {
    expect(expandEnvRefs('--configmap=$(POD_NAMESPACE)/x', {})).toBe('--configmap=$(POD_NAMESPACE)/x');
  });
});
