import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { PROJECT_ROOT } from '../project-root.js';

const RULE = '-'.repeat(79);

/** releaseVersion is the release, package.json's version (`0.1.0`), as `--version` and the status page show it. */
export async function releaseVersion(): Promise<string> {
  const { version } = JSON.parse(await readFile(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string };
  return version;
}

/**
 * versionText is `--version`'s answer, laid out as ingress-nginx's (release, then the nginx it runs), so scripts that
 * grep its lines keep working: the release from package.json, the nginx version from `nginx -v`.
 */
export async function versionText(binary: string): Promise<string> {
  const version = await releaseVersion();
  const nginx = await execa(binary, ['-v'], { reject: false, all: true, timeout: 10_000 });
  const nginxVersion = /nginx version: (\S+)/.exec(nginx.all ?? '')?.[1] ?? `not found (${binary})`;
  return [
    RULE,
    'ingress-actors: an Ingress controller for NGINX',
    `  Release:       v${version}`,
    '  Repository:    ingress-actors',
    `  nginx version: ${nginxVersion}`,
    RULE,
    '',
  ].join('\n');
}
