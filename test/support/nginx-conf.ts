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

/**
 * templateDirectives lists the directive names a template can write: the first word of each
 * line of nginx text in the template files (handlebars lines skipped), map bodies excluded.
 */
export function templateDirectives(sources: readonly string[]): Set<string> {
  const names = new Set<string>();
  for (const source of sources) {
    for (const line of source.split('\n')) {
      const match = /^\s*([a-z_0-9]+)[\s;{]/.exec(line);
      if (match && !line.trim().startsWith('{{')) names.add(match[1]!);
    }
  }
  return names;
}

/** foreignDirectives lists directives of `text` the template cannot write (map entries are data, not directives). */
export function foreignDirectives(text: string, allowed: ReadonlySet<string>): Directive[] {
  return parseConf(text).filter((d) => d.context.at(-1) !== 'map' && !allowed.has(d.name));
}
