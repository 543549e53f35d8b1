/**
 * A tokenizer for nginx configuration text, as nginx's own ngx_conf_read_token reads it, for
 * snippets: words, single- and double-quoted strings with nginx's backslash escapes, `;`, `{`,
 * `}` and `#` comments. It is stricter than nginx where nginx's reading is surprising (a quote
 * inside a word, a `}` glued to a word, text right after a closing quote): such text is refused,
 * not guessed at. One pass over the text, so linear time.
 */
import type { Checked } from './validate.js';

/** NginxWord is one argument as nginx sees it once read: the escapes undone, the quotes gone. */
export interface NginxWord {
  readonly kind: 'word';
  readonly value: string;
  /** it was written in quotes (a directive name never is) */
  readonly quoted: boolean;
}

/** NginxToken is a word or one of the characters that end a statement or open or close a block. */
export type NginxToken = NginxWord | { readonly kind: ';' | '{' | '}' };

/** MAX_NGINX_TEXT is the longest text tokenizeNginx reads (checked before anything else). */
export const MAX_NGINX_TEXT = 16384;

const SPACE = new Set([' ', '\t', '\r', '\n']);

/** unescapeWord undoes what nginx undoes in any word: `\"`, `\'`, `\\`, `\t`, `\r` and `\n`; other backslashes stay. */
function unescapeWord(raw: string): string {
  if (!raw.includes('\\')) return raw;
  let out = '';
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    const next = raw[i + 1];
    if (c !== '\\' || next === undefined) out += c;
    else if (next === '"' || next === "'" || next === '\\') (out += next), i++;
    else if (next === 't') (out += '\t'), i++;
    else if (next === 'r') (out += '\r'), i++;
    else if (next === 'n') (out += '\n'), i++;
    else (out += c + next), i++;
  }
  return out;
}

/**
 * tokenizeNginx reads nginx configuration text into tokens, or says where it stops making sense
 * (an unterminated quote, a quote inside a word, a `}` glued to a word).
 */
export function tokenizeNginx(source: string): Checked<NginxToken[]> {
  if (source.length > MAX_NGINX_TEXT) return { ok: false, message: `is longer than ${MAX_NGINX_TEXT} characters` };
  const out: NginxToken[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (SPACE.has(c)) {
      i++;
    } else if (c === '#') {
      while (i < source.length && source[i] !== '\n') i++;
    } else if (c === ';' || c === '{' || c === '}') {
      out.push({ kind: c });
      i++;
    } else if (c === '"' || c === "'") {
      // A quoted string runs to the same quote not escaped by a backslash.
      let j = i + 1;
      while (j < source.length && source[j] !== c) j += source[j] === '\\' ? 2 : 1;
      if (j >= source.length)
        return { ok: false, message: `has an unterminated ${c === '"' ? 'double' : 'single'}-quoted string` };
      const after = source[j + 1];
      if (after !== undefined && !SPACE.has(after) && after !== ';' && after !== '{') {
        return {
          ok: false,
          message: `has ${JSON.stringify(after)} right after a closing quote (nginx wants a space, ';' or '{')`,
        };
      }
      out.push({ kind: 'word', value: unescapeWord(source.slice(i + 1, j)), quoted: true });
      i = j + 1;
    } else {
      // A bare word ends at a space, ';' or '{' not escaped by a backslash; `${` does not end it.
      let j = i;
      let inVariable = false;
      for (; j < source.length; j++) {
        const d = source[j]!;
        if (d === '\\') j++;
        else if (d === '{' && source[j - 1] === '$') inVariable = true;
        else if (d === '}' && inVariable) inVariable = false;
        else if (SPACE.has(d) || d === ';' || d === '{') break;
        else if (d === '}')
          return { ok: false, message: "has a '}' inside a word (put a space before it, or quote the word)" };
        else if (d === '"' || d === "'")
          return { ok: false, message: 'has a quote inside a word (a quote may only start an argument)' };
      }
      out.push({ kind: 'word', value: unescapeWord(source.slice(i, Math.min(j, source.length))), quoted: false });
      i = j;
    }
  }
  return { ok: true, value: out };
}

/** NginxStatement is one directive read from text: its name and its arguments, read. */
export interface NginxStatement {
  readonly name: string;
  readonly args: readonly string[];
}

const DIRECTIVE_NAME = /^[a-z_][a-z0-9_]{0,63}$/;

/**
 * parseNginxStatements reads text into plain directives (`name arg…;`). Blocks (`if (…) {…}`,
 * `location … {…}`) are refused: nothing in a snippet may open a context of its own.
 */
export function parseNginxStatements(source: string): Checked<NginxStatement[]> {
  const tokens = tokenizeNginx(source);
  if (!tokens.ok) return tokens;
  const statements: NginxStatement[] = [];
  let words: NginxWord[] = [];
  for (const token of tokens.value) {
    if (token.kind === 'word') {
      words.push(token);
      continue;
    }
    const [name, ...args] = words;
    if (token.kind === '}')
      return {
        ok: false,
        message:
          words.length > 0 ? `the directive ${name!.value} has no ';' before '}'` : "has a '}' that closes no block",
      };
    if (name === undefined) return { ok: false, message: `has an empty statement before '${token.kind}'` };
    if (name.quoted || !DIRECTIVE_NAME.test(name.value))
      return { ok: false, message: `${JSON.stringify(name.value.slice(0, 64))} is not a directive name` };
    if (token.kind === '{')
      return {
        ok: false,
        message: `the directive ${name.value} opens a block ('{'); blocks are not allowed in snippets`,
      };
    statements.push({ name: name.value, args: args.map((a) => a.value) });
    words = [];
  }
  if (words.length > 0)
    return { ok: false, message: `the directive ${words[0]!.value.slice(0, 64)} has no ';' at the end` };
  return { ok: true, value: statements };
}

/** NginxVariable is a `$name` or `${name}` an argument uses (`$1`…`$9` captures have digit names). */
export type NginxVariable = string;

/**
 * variablesIn lists the variables an argument names, as nginx's script compiler reads them:
 * `$name` or `${name}` (letters, digits, `_`), refusing a `$` without a name and an
 * unterminated `${`.
 */
export function variablesIn(value: string): Checked<NginxVariable[]> {
  const names: string[] = [];
  for (let i = value.indexOf('$'); i >= 0; i = value.indexOf('$', i)) {
    const braced = value[i + 1] === '{';
    let j = i + (braced ? 2 : 1);
    // A capture is one digit ($1); a name runs over letters, digits and '_'.
    if (!braced && /[0-9]/.test(value[j] ?? '')) j++;
    else while (j < value.length && /[A-Za-z0-9_]/.test(value[j]!)) j++;
    const name = value.slice(i + (braced ? 2 : 1), j);
    if (name === '')
      return { ok: false, message: `${JSON.stringify(value.slice(0, 64))}: a '$' must start a variable name` };
    if (braced) {
      if (value[j] !== '}')
        return {
          ok: false,
          message: `${JSON.stringify(value.slice(0, 64))}: the '\${${name}' is missing its closing '}'`,
        };
      j++;
    }
    names.push(name);
    i = j;
  }
  return { ok: true, value: names };
}
