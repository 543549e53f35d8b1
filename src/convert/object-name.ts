/** Object names convert makes: joined from an Ingress's or Gateway's name and a suffix, shortened to stay valid. */
import { createHash } from 'node:crypto';
import { checkObjectName } from '../model/validate.js';

/** HASH_LENGTH is how many hex digits of sha256 tell apart names shortened to fit. */
const HASH_LENGTH = 8;

/**
 * objectName is `base-suffix` (`base` alone when suffix is empty) when that is a valid object name. When it is not
 * (a label longer than 63, or the whole longer than 253), the base is shortened and the first hex digits of the full
 * name's sha256 go between it and the suffix, so that names too long to join stay valid, distinct and the same from
 * run to run. Should the suffix not fit even so, the whole name is shortened before the hash.
 */
export function objectName(base: string, suffix = ''): string {
  const full = suffix === '' ? base : `${base}-${suffix}`;
  if (checkObjectName(full).ok) return full;
  const hash = createHash('sha256').update(full).digest('hex').slice(0, HASH_LENGTH);
  // A name starts and ends with a letter or digit, and so does each of its labels.
  const head = (s: string, n: number) => {
    // trimmed by a loop, not /[-.]+$/ (a regex whose every start position scans the run again: quadratic)
    let end = Math.min(n, s.length);
    while (end > 0 && (s[end - 1] === '-' || s[end - 1] === '.')) end--;
    return s.slice(0, end);
  };
  const join = (...parts: string[]) => parts.filter((p) => p !== '').join('-');
  // At most 253 + 253 tries of a name of at most 253 + 253 + 9 characters: bounded, whatever the input.
  for (let keep = Math.min(base.length, 253); keep >= 0; keep--) {
    const name = join(head(base, keep), hash, suffix);
    if (checkObjectName(name).ok) return name;
  }
  for (let keep = Math.min(full.length, 253); keep >= 0; keep--) {
    const name = join(head(full, keep), hash);
    if (checkObjectName(name).ok) return name;
  }
  return hash;
}
