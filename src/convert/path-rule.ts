/**
 * pathRule: one path of a main Ingress → the match of an HTTPRoute rule, with its rewrite. A regex path becomes a
 * PathPrefix where it is the prefix idiom, else an anchored RegularExpression; what cannot keep its meaning is
 * reported and left out.
 */
import { normalisePath } from '../model/locations.js';
import { checkRegexPath } from '../model/regex-path.js';
import { checkPath, checkPathType, show } from '../model/validate.js';
import { convertRule } from './annotations.js';
import type { Ident, Json, Report, Rule } from './draft.js';
import { ruleFilters } from './filters.js';

/** The regex idiom `P(/|$)(.*)` with the target `/$2`: exactly PathPrefix P with ReplacePrefixMatch `/`. */
const PREFIX_IDIOM = /^(\/.*?)\/?\(\/\|\$\)\(\.\*\)$/;

/** regexValue turns an nginx regex path (anchored at the start only) into an anchored RegularExpression value. */
function regexValue(path: string): string | null {
  if (path.includes('|')) return null;
  // A final `$`, `.*` or `.+` (or `(.*)`, `(.+)`) already reads to the end; another `.*` would make two ways to
  // split the rest, which the router's linear-time subset refuses.
  const value = /(^|[^\\])(\$|\.[*+]|\(\.[*+]\))$/.test(path) ? path : `${path}.*`;
  return checkRegexPath(value, 'both').ok ? value : null;
}

/** pathRule reads one path of a main Ingress into a rule (without its backends); null (reported) when it cannot. */
export function pathRule(
  report: Report,
  id: Ident,
  rawPath: string | undefined,
  rawType: string | undefined,
  field: string,
): Omit<Rule, 'backends'> | null {
  const s = id.settings;
  const type = checkPathType(rawType);
  if (!type.ok) {
    report(id.owner, `${field}.pathType`, `${type.message}; path left out`);
    return null;
  }
  const path = rawPath ?? '/';
  const target = s.rewriteTarget;
  const regex =
    (s.useRegex || (target !== null && target !== path)) &&
    (rawType ?? 'ImplementationSpecific') === 'ImplementationSpecific';
  const rewriteField = 'metadata.annotations.nginx.ingress.kubernetes.io/rewrite-target';
  const captures = target !== null && /\$[1-9]/.test(target);
  let match: Json;
  let rewrite: Json | null = null;
  if (regex) {
    const checked = checkRegexPath(path);
    if (!checked.ok) {
      report(id.owner, `${field}.path`, `${checked.message}; path left out`);
      return null;
    }
    const idiom = PREFIX_IDIOM.exec(checked.value);
    // Only characters a regex reads literally: `/a.b(/|$)(.*)` is not the prefix `/a.b`.
    const prefix = idiom && /^\/[A-Za-z0-9_~\-/:&=,]*$/.test(idiom[1]!) ? checkPath(idiom[1]) : null;
    if (prefix?.ok && (target === '/$2' || target === null)) {
      const value = normalisePath(prefix.value, 'Prefix');
      match = { path: { type: 'PathPrefix', value } };
      if (target !== null) rewrite = { type: 'ReplacePrefixMatch', replacePrefixMatch: '/' };
      report(
        id.owner,
        `${field}.path`,
        `converted to PathPrefix ${show(value)}${target === null ? '' : ' with ReplacePrefixMatch "/"'}: ${convertRule('use-regex').reason}`,
      );
    } else {
      const value = regexValue(checked.value);
      if (value === null) {
        report(
          id.owner,
          `${field}.path`,
          `${show(path)}: an alternation at the top, or a regex that is not sure to keep its meaning once anchored at ` +
            'both ends, is not converted; path left out',
        );
        return null;
      }
      match = { path: { type: 'RegularExpression', value } };
      report(
        id.owner,
        `${field}.path`,
        `converted to RegularExpression ${show(value)}: ${convertRule('use-regex').reason}`,
      );
      if (captures)
        report(id.owner, rewriteField, `${show(target)}: ${convertRule('rewrite-target').reason}; rewrite left out`);
      else if (target !== null && target !== path) rewrite = { type: 'ReplaceFullPath', replaceFullPath: target };
    }
  } else {
    const checked = checkPath(path);
    if (!checked.ok) {
      report(id.owner, `${field}.path`, `${checked.message}; path left out`);
      return null;
    }
    const exact = type.value === 'Exact';
    match = { path: { type: exact ? 'Exact' : 'PathPrefix', value: normalisePath(checked.value, type.value) } };
    if (target !== null && target !== path) {
      if (captures)
        report(id.owner, rewriteField, `${show(target)}: ${convertRule('rewrite-target').reason}; rewrite left out`);
      else rewrite = { type: 'ReplaceFullPath', replaceFullPath: target };
    }
  }
  const p = match.path as { type: string; value: string };
  return {
    key: `${p.type} ${p.value}`,
    match,
    filters: ruleFilters(s, rewrite),
    timeout: s.redirect ? null : s.timeout,
    extra: [],
  };
}
