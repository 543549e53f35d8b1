/**
 * The optional dynamic modules of the nginx binary: Debian ships each as a package of its own, so what a
 * config may use depends on what is installed. Found once at start; the model loads and allows only these.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import type { NginxModules } from '../model/machine-settings.js';
import { CRS, OPTIONAL_MODULES } from '../model/optional-modules.js';

/** modulesPath is nginx's `--modules-path` from `nginx -V` (Debian's /usr/lib/nginx/modules when it says none). */
export async function modulesPath(binary: string): Promise<string> {
  const result = await execa(binary, ['-V'], { reject: false, all: true, timeout: 10_000 });
  const match = /--modules-path=(\S+)/.exec(result.all ?? '');
  return match?.[1] ?? '/usr/lib/nginx/modules';
}

/** findModules gives the path of each optional module `binary` can load; absent ones are left out. */
export async function findModules(binary: string): Promise<NginxModules> {
  const dir = await modulesPath(binary);
  const found: Record<string, string> = {};
  for (const [feature, { file }] of Object.entries(OPTIONAL_MODULES)) {
    const path = join(dir, file);
    if (existsSync(path)) found[feature] = path;
  }
  const crs =
    existsSync(CRS.setup) && existsSync(CRS.rules) ? { setup: CRS.setup, rules: `${CRS.rules}/*.conf` } : undefined;
  return { ...(found as NginxModules), ...(crs ? { crs } : {}) };
}
