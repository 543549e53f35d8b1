import { checkBool, type Checked } from '../validate.js';
import type { AnnotationInput } from './types.js';

/**
 * read applies `check` to an annotation: undefined when absent, the typed value when valid,
 * and on an invalid value records the problem (the key's onInvalid rule applies) and gives undefined.
 */
export function read<T>(input: AnnotationInput, key: string, check: (value: string) => Checked<T>): T | undefined {
  const raw = input.get(key);
  if (raw === undefined) return undefined;
  const checked = check(raw);
  if (checked.ok) return checked.value;
  input.invalid(key, checked.message);
  return undefined;
}

/**
 * readList reads a comma-separated list entry by entry: undefined when absent or when the value
 * is longer than `max` (an invalid value: the key's rule applies), else the entries `check`
 * accepts (empty entries skipped). Each refused entry is reported on its own (a `filter` key drops it and keeps the rest).
 */
export function readList<T>(
  input: AnnotationInput,
  key: string,
  max: number,
  check: (entry: string) => Checked<T>,
): T[] | undefined {
  const raw = input.get(key);
  // A blank list is no list: its default applies, as ingress-nginx reads a blank annotation.
  if (raw === undefined || raw.trim() === '') return undefined;
  if (raw.length > max) {
    input.invalid(key, `is longer than ${max} characters`);
    return undefined;
  }
  const out: T[] = [];
  for (const entry of raw.split(',')) {
    // An empty entry (`a,,b`, a trailing comma) is nothing, as ingress-nginx reads these lists.
    if (entry.trim() === '') continue;
    const checked = check(entry.trim());
    if (checked.ok) out.push(checked.value);
    else input.invalid(key, checked.message, 'entry');
  }
  return out;
}

/** noteWithout notes each of `keys` that is set while `needed` is not: it has no effect. */
export function noteWithout(input: AnnotationInput, keys: readonly string[], needed: string): void {
  for (const key of keys) if (input.get(key) !== undefined) input.note(key, `has no effect without ${needed}`);
}

/** readBool reads a boolean annotation (Go's strconv.ParseBool spellings): null when absent. */
export function readBool(input: AnnotationInput, key: string): boolean | null {
  return read(input, key, checkBool) ?? null;
}

/** oneOf builds a checker for a closed set of values. */
export function oneOf<T extends string>(values: readonly T[], caseless = false): (value: string) => Checked<T> {
  return (value) => {
    const found = values.find((v) => (caseless ? v.toLowerCase() === value.trim().toLowerCase() : v === value));
    return found !== undefined
      ? { ok: true, value: found }
      : { ok: false, message: `${JSON.stringify(value.slice(0, 80))} is not one of ${values.join(', ')}` };
  };
}

/** intIn builds a checker for a whole number between min and max. */
export function intIn(min: number, max: number): (value: string) => Checked<number> {
  return (value) => {
    const n = value.length <= 12 && /^\d{1,10}$/.test(value.trim()) ? Number(value.trim()) : NaN;
    return n >= min && n <= max
      ? { ok: true, value: n }
      : { ok: false, message: `${JSON.stringify(value.slice(0, 80))} is not a whole number from ${min} to ${max}` };
  };
}
