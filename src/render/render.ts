import Handlebars from 'handlebars';
import type { Location, NginxModel } from '../model/nginx-model.js';
import { luaString, quote, quoteLines } from './quote.js';

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

/** Root fields a partial's text may not depend on if it is to be reused: they change with every server. */
const PER_SERVER_ROOT = /@root\.(servers|defaultServer|upstreams|certificates|filesDigest)\b/;
/** What ties a partial's text to where it is called from rather than to its context object. */
const CALL_SITE = /\.\.\/|@index|@first|@last|@key/;

/** partialCalls are the names of the partials a template source calls (`{{> name}}`, `{{#> name}}`). */
export function partialCalls(source: string): string[] {
  return [...source.matchAll(/\{\{~?#?>\s*([\w-]+)/g)].map((m) => m[1]!);
}

/**
 * reusablePartials are the partials whose text depends only on their context and the root's settings, with every
 * partial they call.
 */
function reusablePartials(partials: Readonly<Record<string, string>>): Set<string> {
  const clean = (name: string, seen: Set<string>): boolean => {
    const source = partials[name];
    if (source === undefined || CALL_SITE.test(source) || PER_SERVER_ROOT.test(source)) return false;
    if (seen.has(name)) return true;
    seen.add(name);
    return partialCalls(source).every((called) => clean(called, seen));
  };
  return new Set(Object.keys(partials).filter((name) => clean(name, new Set())));
}

/** rootSettings is the part of a model every partial may read through @root, as one comparable string. */
function rootSettings(model: NginxModel): string {
  const { servers: _s, defaultServer: _d, upstreams: _u, certificates: _c, filesDigest: _f, ...settings } = model;
  return JSON.stringify(settings);
}

/** environment is a Handlebars environment of its own with the template's helpers (see compileTemplate). */
function environment(): typeof Handlebars {
  const env = Handlebars.create();
  env.registerHelper('q', (value: unknown, options: Handlebars.HelperOptions) =>
    quote(value, typeof options.hash?.prefix === 'string' ? options.hash.prefix : ''),
  );
  env.registerHelper('lua', (value: unknown) => luaString(value));
  env.registerHelper('qlines', (value: unknown) => quoteLines(value));
  env.registerHelper('inlineProfile', (locations: readonly Location[], options: Handlebars.HelperOptions) =>
    inlineProfile(env, locations, options.data),
  );
  // the name of a profile that is the balanced proxy_pass alone (templates written before inlineProfile)
  env.registerHelper('plainProfile', (locations: readonly Location[], options: Handlebars.HelperOptions) => {
    const inline = inlineProfile(env, locations, options.data);
    return inline && inline.otel === '' && inline.lines.length === 1 ? inline.name : '';
  });
  return env;
}

/** PROXY_PASS is the last directive of a profile the router's location may hold: the balanced proxy_pass. */
const PROXY_PASS = 'proxy_pass "http://upstream_balancer";';
/** a traced profile's first directive: the span's mode, which the router sets instead (see InlineProfile) */
const OTEL = /^set \$ia_otel "(trust|new)";$/;
/** a directive the router's location may hold for its profile: a proxied header (the profile's, as it wrote it) */
const PROXY_HEADER = /^proxy_set_header [^;{}]*;$/;

/**
 * InlineProfile is the profile the shared server's `location /` holds beside the router, whose requests without a body
 * it serves there, without the jump to the profile's named location (lua/ingress_actors/ingress_router.lua): its
 * name, the directives `location /` holds for it (its own text, written by the `location` partial), and its span mode
 * ("trust", "new" or ""), which the router sets for those requests: a `set` in `location /` would set it for every
 * request that passes through on its way to another profile.
 */
interface InlineProfile {
  readonly name: string;
  readonly lines: readonly string[];
  readonly otel: string;
}

/** what inlineProfile found, by render (its model) and list of locations */
const inlineProfiles = new WeakMap<object, WeakMap<readonly Location[], InlineProfile | null>>();

/**
 * inlineProfile is the profile among `locations` (named locations) that `location /` holds: one that is the balanced
 * proxy_pass alone, or that with a span's mode and proxied headers (tracing on: every profile sets its headers then);
 * of those, the one an Ingress without annotations gets (traced as the ConfigMap says), else the plain one, else the
 * first; null when none is. It depends on the set of profiles, never on how many routes use each: a route's change
 * must not change nginx.conf. The profiles' text is compared as the `location` partial writes it, so whatever a profile
 * gains later keeps it out. Worked out once per render and list of locations (the template asks twice).
 */
function inlineProfile(env: typeof Handlebars, locations: readonly Location[], data: unknown): InlineProfile | null {
  const model = (data as { root: NginxModel }).root;
  let ofRoot = inlineProfiles.get(model);
  if (!ofRoot) inlineProfiles.set(model, (ofRoot = new WeakMap()));
  const known = ofRoot.get(locations);
  if (known !== undefined) return known;
  const config = model.config;
  const preferred = config.enableOpentelemetry ? (config.opentelemetryTrustIncomingSpan ? 'trust' : 'new') : '';
  const partial = env.partials.location as Handlebars.TemplateDelegate<Location>;
  const candidates: InlineProfile[] = [];
  for (const location of locations) {
    if (!location.named) continue;
    const lines = partial(location, { data: data as Record<string, unknown> })
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#'));
    if (lines[0] !== `location ${location.named} {` || lines[lines.length - 1] !== '}') continue;
    const body = lines.slice(1, -1);
    if (body[body.length - 1] !== PROXY_PASS) continue;
    if (body.length === 1) candidates.push({ name: location.named, lines: body, otel: '' });
    const otel = OTEL.exec(body[0] ?? '')?.[1];
    if (otel && body.slice(1, -1).every((line) => PROXY_HEADER.test(line)))
      candidates.push({ name: location.named, lines: body.slice(1), otel });
  }
  const found =
    candidates.find((c) => c.otel === preferred) ?? candidates.find((c) => c.otel === '') ?? candidates[0] ?? null;
  ofRoot.set(locations, found);
  return found;
}

/**
 * compileTemplate compiles a template set in an environment of its own with two helpers, `q`
 * (the quoting helper; `prefix=` prepends a constant) and `lua` (a Lua string literal, for a `*_by_lua_block`). Strict mode makes a missing field an
 * error instead of an empty string; noEscape because quoting is q's job, not HTML escaping's.
 *
 * A partial called without parameters on an object (a server, an upstream) keeps its text for
 * that object: an incremental build hands unchanged servers back as the same objects, so only
 * what changed is formatted again. The kept texts are dropped when the root settings change,
 * and partials that read their call site (`../`, `@index`) are never kept. `keepTexts: false` keeps none (the tests'
 * from-scratch oracle).
 */
export function compileTemplate(sources: TemplateSources, options: { keepTexts?: boolean } = {}): NginxTemplate {
  const env = environment();
  parseOrThrow(env, 'main', sources.main);
  const reusable = options.keepTexts === false ? new Set<string>() : reusablePartials(sources.partials);
  let kept = new WeakMap<object, Map<string, string>>();
  for (const [name, source] of Object.entries(sources.partials)) {
    parseOrThrow(env, `partial ${name}`, source);
    const partial = env.compile(source, { strict: true, noEscape: true });
    if (!reusable.has(name)) {
      env.registerPartial(name, partial);
      continue;
    }
    env.registerPartial(
      name,
      (context: unknown, options?: Handlebars.RuntimeOptions & { hash?: Record<string, unknown> }) => {
        if (typeof context !== 'object' || context === null || Object.keys(options?.hash ?? {}).length > 0)
          return partial(context, options);
        let texts = kept.get(context);
        if (!texts) kept.set(context, (texts = new Map()));
        let text = texts.get(name);
        if (text === undefined) texts.set(name, (text = partial(context, options)));
        return text;
      },
    );
  }
  const main = env.compile<NginxModel>(sources.main, { strict: true, noEscape: true });
  let settings: string | null = null;
  return {
    sources,
    run: (model) => {
      const now = rootSettings(model);
      if (now !== settings) {
        kept = new WeakMap();
        settings = now;
      }
      return main(model);
    },
  };
}

/** render formats a model with a template: pure, and byte-identical for an identical model. */
export function render(model: NginxModel, template: NginxTemplate): string {
  return template.run(model);
}

/**
 * RenderedText keeps the last model's text: a model equal to the last one, field by field, has the same text (render
 * is pure). With routes as data most syncs change only pushed data, and their nginx.conf is then not formatted again.
 * Equal is sameValue's: the same objects, or arrays and plain objects of the same values (a build makes some parts
 * anew each time, of the same objects); anything else only when it is the same object.
 */
export class RenderedText {
  private last: { readonly model: NginxModel; readonly template: NginxTemplate; readonly text: string } | null = null;

  render(model: NginxModel, template: NginxTemplate): string {
    const last = this.last;
    if (last !== null && last.template === template && sameValue(last.model, model)) {
      this.last = { model, template, text: last.text };
      return last.text;
    }
    const text = render(model, template);
    this.last = { model, template, text };
    return text;
  }
}

/**
 * sameValue says whether two model values render alike: the same value, or arrays and plain objects whose items or
 * own fields are. It stops at the first difference and at every object the two share, so parts carried over from
 * the last build cost a reference comparison each.
 */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameValue(a[i], b[i])) return false;
    return true;
  }
  if (!plain(a) || !plain(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys)
    if (!Object.hasOwn(b, key) || !sameValue((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]))
      return false;
  return true;
}

function plain(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** LocationRenderer formats one location as server.hbs does: the `location` partial, then its auth-url locations. */
export type LocationRenderer = (location: Location, root: NginxModel) => string;

/**
 * compileLocationRenderer compiles the `location` and `external-auth` partials of a template set (and those they call)
 * with the helpers render() uses, into a function formatting one location against `root` (what `@root` reads). It
 * keeps no texts between calls and does not touch render()'s output; src/render/profile.ts keys location profiles by it.
 */
export function compileLocationRenderer(sources: TemplateSources): LocationRenderer {
  const env = environment();
  for (const [name, source] of Object.entries(sources.partials)) {
    parseOrThrow(env, `partial ${name}`, source);
    env.registerPartial(name, env.compile(source, { strict: true, noEscape: true }));
  }
  // server.hbs's own lines around a location, so the text is the one nginx.conf holds
  const one = env.compile<Location>('{{> location}}\n{{#with externalAuth}}\n\n{{> external-auth}}\n{{/with}}', {
    strict: true,
    noEscape: true,
  });
  return (location, root) => one(location, { data: { root } });
}
