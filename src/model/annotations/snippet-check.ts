/**
 * The snippet checker. A snippet is raw nginx configuration, so it cannot be quoted: it is
 * tokenized as nginx reads it, every directive is checked against a blocklist, and what passes
 * is re-serialised from the tokens (one directive a line), so the template prints exactly what
 * was checked and a snippet can never close the block it sits in.
 */
import { show, type Checked } from '../validate.js';

/**
 * BLOCKED_DIRECTIVES are refused by name: ingress-nginx's post-2025 guidance (file access with
 * root/alias, Lua, module loading, the suggested annotation-value-word-blocklist's proxy_pass
 * and location) plus what else reads or writes files, runs code, reaches other hosts or would
 * change how other Ingresses on the host see the client.
 */
export const BLOCKED_DIRECTIVES: readonly string[] = [
  'include', 'load_module', 'root', 'alias', 'location', 'server', 'upstream', 'map', 'geo', 'split_clients', 'http', 'events', 'stream',
  'mail', 'env', 'access_log', 'error_log', 'open_log_file_cache', 'log_format', 'mirror', 'auth_basic_user_file', 'auth_request',
  'real_ip_header', 'set_real_ip_from', 'real_ip_recursive', 'proxy_store', 'fastcgi_store', 'uwsgi_store', 'scgi_store', 'resolver',
  'try_files', 'secure_link_secret', 'geoip_country', 'geoip_city', 'geoip_org', 'ssi', 'ssi_types', 'xslt_stylesheet', 'image_filter',
  'dav_methods', 'create_full_put_path', 'limit_req_zone', 'limit_conn_zone', 'lua_package_path',
];

/** BLOCKED_PATTERNS are refused families of directives: Lua, Perl, njs, TLS and key files, temp paths and every *_pass. */
export const BLOCKED_PATTERNS: readonly RegExp[] = [/_by_lua/, /^lua_/, /^perl/, /^js_/, /^ssl_/, /_ssl_/, /_temp_path$/, /_pass$/, /^more_/];

/** BLOCKED_TEXT is ingress-nginx's inspector rules and suggested words, applied to the whole snippet. */
export const BLOCKED_TEXT: readonly RegExp[] = [/\/etc\/(passwd|shadow|group|nginx|ingress-controller)/i, /\/var\/run\/secrets/i, /_by_lua/i, /serviceaccount/i, /load_module/i, /lua_package/i];

interface Token {
  readonly text: string;
  readonly quote: '"' | "'" | null;
}

function tokenize(source: string): Checked<(Token | ';' | '{' | '}')[]> {
  const out: (Token | ';' | '{' | '}')[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (c === ' ' || c === '\t' || c === '\n') i++;
    else if (c === '#') while (i < source.length && source[i] !== '\n') i++;
    else if (c === ';' || c === '{' || c === '}') {
      out.push(c);
      i++;
    } else if (c === '"' || c === "'") {
      const end = source.indexOf(c, i + 1);
      const text = end < 0 ? '' : source.slice(i + 1, end);
      if (end < 0 || text.includes('\n')) return { ok: false, message: 'has an unterminated quoted string' };
      out.push({ text, quote: c });
      i = end + 1;
    } else {
      let text = '';
      while (i < source.length && !/[\s;{}]/.test(source[i]!)) text += source[i++];
      if (/["']/.test(text)) return { ok: false, message: `${show(text)}: a quote may only start a token` };
      if (text.endsWith('$') && source[i] === '{') return { ok: false, message: `${show(text)}: write variables as $name, not \${name}` };
      out.push({ text, quote: null });
    }
  }
  return { ok: true, value: out };
}

const spell = (t: Token) => (t.quote ? `${t.quote}${t.text}${t.quote}` : t.text);

function checkName(name: Token): string | null {
  if (name.quote || !/^[a-z_][a-z0-9_]*$/.test(name.text)) return `${show(name.text)} is not a directive name`;
  if (BLOCKED_DIRECTIVES.includes(name.text) || BLOCKED_PATTERNS.some((p) => p.test(name.text))) return `the directive ${name.text} is not allowed in snippets`;
  return null;
}

/**
 * checkSnippet accepts a snippet of plain directives and `if (...) { ... }` blocks (one level),
 * none of them blocked, and returns it re-serialised one directive a line.
 */
export function checkSnippet(source: string): Checked<string[]> {
  if (source.length > 16384) return { ok: false, message: 'is longer than 16384 characters' };
  if (/[^\x20-\x7e\t\n]/.test(source)) return { ok: false, message: 'may hold only printable ASCII, tabs and newlines' };
  if (source.includes('\\')) return { ok: false, message: 'may not contain backslashes' };
  const text = BLOCKED_TEXT.find((p) => p.test(source));
  if (text) return { ok: false, message: `matches the blocklist (${text.source})` };
  const tokens = tokenize(source);
  if (!tokens.ok) return tokens;
  const lines: string[] = [];
  let words: Token[] = [];
  let inBlock = false;
  for (const token of tokens.value) {
    if (token === ';' || token === '{') {
      const [name, ...args] = words;
      if (!name) return { ok: false, message: `has an empty statement before '${token}'` };
      const bad = checkName(name);
      if (bad) return { ok: false, message: bad };
      if (token === '{' && (name.text !== 'if' || inBlock)) return { ok: false, message: 'only if blocks, one level deep, are allowed' };
      const line = [name, ...args].map(spell).join(' ');
      lines.push(`${inBlock ? '    ' : ''}${line}${token === ';' ? ';' : ' {'}`);
      inBlock ||= token === '{';
      words = [];
    } else if (token === '}') {
      if (!inBlock || words.length > 0) return { ok: false, message: "has an unbalanced '}' or a directive without ';'" };
      lines.push('}');
      inBlock = false;
    } else {
      words.push(token);
    }
  }
  if (inBlock || words.length > 0) return { ok: false, message: "ends inside a block or without ';'" };
  if (lines.length === 0) return { ok: false, message: 'holds no directive' };
  return { ok: true, value: lines };
}
