/**
 * The quoting helpers: `quote` for nginx.conf, `luaString` for the few values a `*_by_lua_block` takes as code.
 * Every value the template prints goes through one of them, so even a value a validator let through cannot end a
 * directive, open a block or start a comment. `quote` makes it one double-quoted nginx token with `"` and `\`
 * escaped; control characters have no safe spelling in nginx.conf, so they are refused outright (render fails
 * instead of writing a broken file).
 */

/** RenderError is a value the template cannot print safely. */
export class RenderError extends Error {
  override name = 'RenderError';
}

/** quote spells a string or number as one nginx token; `prefix` is prepended before quoting. */
export function quote(value: unknown, prefix = ''): string {
  if (typeof value === 'number' && Number.isFinite(value)) value = String(value);
  if (typeof value !== 'string') throw new RenderError(`cannot quote a ${value === null ? 'null' : typeof value}`);
  const text = prefix + value;
  if (/[\x00-\x1f\x7f]/.test(text))
    throw new RenderError(`refusing to quote a control character in ${JSON.stringify(text.slice(0, 40))}`);
  return `"${text.replace(/["\\]/g, (c) => `\\${c}`)}"`;
}

/** LUA_PLAIN are the bytes a Lua string literal may carry as they are; every other byte is a `\ddd` escape. */
const LUA_PLAIN = /^[A-Za-z0-9._:/*[\]-]$/;

/**
 * luaString spells a string as one double-quoted Lua literal for a `*_by_lua_block` (a Gateway server's key, say).
 * Every byte outside a small plain set is escaped as `\ddd`, so no value can end the string, the block or the
 * directive, whatever nginx's block parser or Lua make of the characters around it.
 */
export function luaString(value: unknown): string {
  if (typeof value !== 'string')
    throw new RenderError(`cannot spell a ${value === null ? 'null' : typeof value} in Lua`);
  let out = '"';
  for (const byte of Buffer.from(value, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += byte < 0x80 && LUA_PLAIN.test(c) ? c : `\\${String(byte).padStart(3, '0')}`;
  }
  return `${out}"`;
}

/**
 * quoteLines spells a text of several lines (a ModSecurity chain: src/model/modsecurity-policy.ts) as one nginx token:
 * each line quoted as `quote` does, the line breaks as `\n`, which nginx turns back into one inside a quoted string.
 * Any other control character is refused.
 */
export function quoteLines(value: unknown): string {
  if (typeof value !== 'string') throw new RenderError(`cannot quote a ${value === null ? 'null' : typeof value}`);
  return `"${value
    .split('\n')
    .map((line) => quote(line).slice(1, -1))
    .join('\\n')}"`;
}
