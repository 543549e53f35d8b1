import { readdir, readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { PROJECT_ROOT } from '../project-root.js';
import type { NginxModel } from '../model/nginx-model.js';
import { compileTemplate, render, TemplateError, type NginxTemplate, type TemplateSources } from './render.js';

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

/**
 * loadCheckedTemplate reads and compiles a template set and test-renders it against `model`, so
 * a template that compiles but fails on real data (a misspelt field, in strict mode) is refused
 * too. Errors name the file and, where handlebars says it, the line.
 */
export async function loadCheckedTemplate(file: string, model: NginxModel): Promise<NginxTemplate> {
  let template: NginxTemplate;
  try {
    template = compileTemplate(await readTemplateSources(file));
  } catch (error) {
    throw new TemplateError(`${file}: ${(error as Error).message}`);
  }
  try {
    render(model, template);
  } catch (error) {
    throw new TemplateError(`${file}: does not render the current model: ${(error as Error).message}`);
  }
  return template;
}
