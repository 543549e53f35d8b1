import Handlebars from 'handlebars';
import type { NginxModel } from '../model/nginx-model.js';
import { quote } from './quote.js';

/** TemplateSources is a main template and its partials, by name, as text. */
export interface TemplateSources {
  readonly main: string;
  readonly partials: Readonly<Record<string, string>>;
}

/** NginxTemplate is a compiled template set, ready for render(). */
export interface NginxTemplate {
  readonly sources: TemplateSources;
  readonly run: (model: NginxModel) => string;
}

/** TemplateError is a template that does not compile, with the template's name and line. */
export class TemplateError extends Error {
  override name = 'TemplateError';
}

function parseOrThrow(env: typeof Handlebars, name: string, source: string): void {
  try {
    env.parse(source);
  } catch (error) {
    throw new TemplateError(`${name}: ${(error as Error).message}`);
  }
}

/**
 * compileTemplate compiles a template set in an environment of its own with one helper, `q`
 * (the quoting helper; `prefix=` prepends a constant). Strict mode makes a missing field an
 * error instead of an empty string; noEscape because quoting is q's job, not HTML escaping's.
 */
export function compileTemplate(sources: TemplateSources): NginxTemplate {
  const env = Handlebars.create();
  env.registerHelper('q', (value: unknown, options: Handlebars.HelperOptions) =>
    quote(value, typeof options.hash?.prefix === 'string' ? options.hash.prefix : ''),
  );
  parseOrThrow(env, 'main', sources.main);
  for (const [name, source] of Object.entries(sources.partials)) {
    parseOrThrow(env, `partial ${name}`, source);
    env.registerPartial(name, env.compile(source, { strict: true, noEscape: true }));
  }
  const main = env.compile<NginxModel>(sources.main, { strict: true, noEscape: true });
  return { sources, run: (model) => main(model) };
}

/** render formats a model with a template: pure, and byte-identical for an identical model. */
export function render(model: NginxModel, template: NginxTemplate): string {
  return template.run(model);
}
