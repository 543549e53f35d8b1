/**
 * A tokenizer for nginx.conf, enough to list the directives a file really contains: quoted
 * strings (with nginx's backslash escapes), comments, `;`, `{` and `}`, as nginx's own parser
 * reads them. Tests use it to prove that no Kubernetes string turned into a directive.
 */

/** Directive is one statement: its name, arguments and the names of the blocks around it. */
export interface Directive {
  readonly name: string;
  readonly args: readonly string[];
  readonly context: readonly string[];
}

/** parseConf lists every directive of an nginx.conf, or throws when quotes or braces do not balance. */
export function parseConf(text: string): Directive[] {
  const directives: Directive[] = [];
  const stack: string[] = [];
  let words: string[] = [];
  let i = 0;
  const push = (word: string) => words.push(word);
  while (i < text.length) {
    const c = text[i]!;
    if (c === '#') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (/\s/.test(c)) {
      i++;
    } else if (c === '{' && words[0]?.endsWith('_by_lua_block')) {
      // As lua-nginx-module: the block is Lua code, read to its matching brace, one argument of the directive.
      const end = luaBlockEnd(text, i);
      directives.push({ name: words[0], args: [text.slice(i + 1, end).trim()], context: [...stack] });
      words = [];
      i = end + 1;
    } else if (c === ';' || c === '{') {
      const [name, ...args] = words;
      if (name === undefined) throw new Error(`empty statement at offset ${i}`);
      directives.push({ name, args, context: [...stack] });
      if (c === '{') stack.push(name);
      words = [];
      i++;
    } else if (c === '}') {
      if (words.length > 0) throw new Error(`unterminated directive ${words[0]} at offset ${i}`);
      if (stack.pop() === undefined) throw new Error(`unbalanced '}' at offset ${i}`);
      i++;
    } else if (c === '"' || c === "'") {
      let word = '';
      i++;
      while (i < text.length && text[i] !== c) {
        if (text[i] === '\\' && i + 1 < text.length) i++;
        word += text[i];
        i++;
      }
      if (i >= text.length) throw new Error('unterminated quoted string');
      i++;
      push(word);
    } else {
      let word = '';
      // As nginx: inside a bare word, quotes and '#' are ordinary characters.
      while (i < text.length && !/[\s;{}]/.test(text[i]!)) word += text[i++];
      push(word);
    }
  }
  if (stack.length > 0 || words.length > 0) throw new Error(`unclosed block ${stack.join(' > ')}`);
  return directives;
}

/** luaBlockEnd is the offset of the `}` that closes the Lua block opening at `open`, past Lua strings. */
function luaBlockEnd(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"' || c === "'") {
      for (i++; i < text.length && text[i] !== c; i++) if (text[i] === '\\') i++;
    } else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return i;
  }
  throw new Error(`unclosed Lua block at offset ${open}`);
}

/**
 * templateDirectives lists the directive names a template can write: the first word of each
 * line of nginx text in the template files and of each one-line block (handlebars lines skipped).
 */
export function templateDirectives(sources: readonly string[]): Set<string> {
  const names = new Set<string>();
  for (const source of sources) {
    for (const line of source.split('\n')) {
      if (line.trim().startsWith('{{')) continue;
      const match = /^\s*([a-z_0-9]+)[\s;{]/.exec(line);
      if (match) names.add(match[1]!);
      // a one-line block: `location = /x { content_by_lua_block { ... } }` (a `{{` is handlebars, not a block)
      for (const inner of line.matchAll(/(?<!\{)\{(?!\{)\s*([a-z_0-9]+)[\s;{]/g)) names.add(inner[1]!);
    }
  }
  return names;
}

/** foreignDirectives lists directives of `text` the template cannot write (map entries are data, not directives). */
export function foreignDirectives(text: string, allowed: ReadonlySet<string>): Directive[] {
  return parseConf(text).filter((d) => d.context.at(-1) !== 'map' && !allowed.has(d.name));
}
