/**
 * The optional nginx modules the ConfigMap may need (enable-brotli, add-headers), found once at start in
 * nginx's modules folder; the model loads one only while a key needs it, and says so when it is missing.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { OPTIONAL_MODULE_FILES, type OptionalModules } from '../model/global-extras.js';
import { modulesPath } from './lua.js';

/** findOptionalModules lists the optional modules whose files are in `binary`'s modules folder. */
export async function findOptionalModules(binary: string): Promise<OptionalModules> {
  const dir = await modulesPath(binary).catch(() => '/usr/lib/nginx/modules');
  const found: { -readonly [K in keyof OptionalModules]: string } = {};
  for (const [name, { file }] of Object.entries(OPTIONAL_MODULE_FILES) as [keyof OptionalModules, { file: string }][]) {
    if (existsSync(join(dir, file))) found[name] = join(dir, file);
  }
  return found;
}
