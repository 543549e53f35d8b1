import { readdir, readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { PROJECT_ROOT } from '../project-root.js';
import { compileTemplate, type NginxTemplate, type TemplateSources } from './render.js';

/** DEFAULT_TEMPLATE is the template shipped in templates/. */
export const DEFAULT_TEMPLATE = join(PROJECT_ROOT, 'templates', 'nginx.conf.hbs');

/** readTemplateSources reads a main template and every `*.hbs` in the `partials/` folder beside it. */
export async function readTemplateSources(file: string): Promise<TemplateSources> {
  const main = await readFile(file, 'utf8');
  const folder = join(dirname(file), 'partials');
  const names = await readdir(folder).catch(() => [] as string[]);
  const partials: Record<string, string> = {};
  for (const name of names.filter((n) => n.endsWith('.hbs')).sort()) {
    partials[basename(name, '.hbs')] = await readFile(join(folder, name), 'utf8');
  }
  return { main, partials };
}

/** loadTemplate reads and compiles a template set from disk. */
export async function loadTemplate(file: string = DEFAULT_TEMPLATE): Promise<NginxTemplate> {
  return compileTemplate(await readTemplateSources(file));
}
