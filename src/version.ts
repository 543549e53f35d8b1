import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PROJECT_ROOT } from './project-root.js';

/** releaseVersion is the release, package.json's version (`0.1.0`), as `--version` and the status page show it. */
export async function releaseVersion(): Promise<string> {
  const { version } = JSON.parse(await readFile(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string };
  return version;
}
