import { execa } from 'execa';
import { releaseVersion } from '../version.js';

const RULE = '-'.repeat(79);

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
