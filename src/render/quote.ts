/**
 * The one quoting helper. Every value the template prints goes through it, so even a value a
 * validator let through cannot end a directive, open a block or start a comment: it becomes one
 * double-quoted nginx token with `"` and `\` escaped. Control characters have no safe spelling
 * in nginx.conf, so they are refused outright (render fails instead of writing a broken file).
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
