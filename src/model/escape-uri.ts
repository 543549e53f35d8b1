/**
 * Stock nginx cannot URL-escape a variable, and ingress-nginx's `$escaped_request_uri` (auth-signin's `rd=`) is
 * the request URI escaped as a query component. Without Lua, nginx.conf does it with maps: each step splits off
 * the run of characters that stay and the one character after it, whose escape a table gives. With Lua, the
 * location computes it with ngx.escape_uri, and these maps are not written.
 */

/** ESCAPE_STEPS is how many characters the maps escape; a URI with more is cut after the last one escaped. */
export const ESCAPE_STEPS = 24;

/** KEPT are the characters ngx.escape_uri leaves as they are, so both modes give the same bytes. */
const KEPT = "A-Za-z0-9._~!*'()-";

/** EscapeStep is one split: `variable` is `source`'s kept run and its first character's escape. */
export interface EscapeStep {
  /** the rest of the URI this step reads */
  readonly source: string;
  readonly variable: string;
  /** the regex map key that splits `source`, setting the kept run, the character and the next step's source */
  readonly regex: string;
  /** the kept run, then the character's escape */
  readonly value: string;
  /** the character, which the table maps to `escaped` */
  readonly character: string;
  readonly escaped: string;
}

/** UriEscape is what nginx.conf writes for `$escaped_request_uri` without Lua. */
export interface UriEscape {
  readonly steps: readonly EscapeStep[];
  /** each printable ASCII character that is escaped, and its `%XX` */
  readonly table: readonly { readonly key: string; readonly value: string }[];
  /** the concatenation of every step's value */
  readonly result: string;
}

const hex = (code: number) => `%${code.toString(16).toUpperCase().padStart(2, '0')}`;

/** uriEscape gives the maps of `$escaped_request_uri`, in ESCAPE_STEPS steps. */
export function uriEscape(): UriEscape {
  const steps: EscapeStep[] = [];
  for (let k = 0; k < ESCAPE_STEPS; k++) {
    steps.push({
      source: k === 0 ? '$request_uri' : `$ia_eu_r${k}`,
      variable: `$ia_eu_t${k}`,
      regex: `~^(?<ia_eu_a${k}>[${KEPT}]*)(?<ia_eu_c${k}>[^${KEPT}])(?<ia_eu_r${k + 1}>.*)$`,
      value: `$ia_eu_a${k}$ia_eu_e${k}`,
      character: `$ia_eu_c${k}`,
      escaped: `$ia_eu_e${k}`,
    });
  }
  const kept = new RegExp(`^[${KEPT}]$`);
  const table: { key: string; value: string }[] = [];
  for (let code = 0x21; code < 0x7f; code++) {
    const c = String.fromCharCode(code);
    if (!kept.test(c)) table.push({ key: c, value: hex(code) });
  }
  return { steps, table, result: steps.map((s) => s.variable).join('') };
}
