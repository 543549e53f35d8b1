/**
 * The JSONPath subset of CRD additionalPrinterColumns, as kube-apiserver evaluates them for
 * `kubectl get` tables: `.a.b`, `['a.b']`, `[0]`, `[*]`, and filters `[?(@.a.b=="x")]` (`==`,
 * `!=`) on lists. Read once, left to right; a path it cannot read selects nothing.
 */

type Step =
  | { readonly field: string }
  | { readonly index: number }
  | { readonly all: true }
  | { readonly filter: readonly string[]; readonly equal: boolean; readonly value: string };

const FIELD = /^\.([A-Za-z0-9_$-]+)/;
const QUOTED = /^\[['"]([^'"\]]*)['"]\]/;
const INDEX = /^\[(-?\d+)\]/;
const ALL = /^(?:\[\*\]|\.\*)/;
const FILTER = /^\[\?\(@((?:\.[A-Za-z0-9_$-]+)+)\s*(==|!=)\s*(?:"([^"]*)"|'([^']*)'|([A-Za-z0-9_.-]+))\)\]/;

/** parseJsonPath reads a printer column's path; undefined when it lies outside the subset. */
export function parseJsonPath(text: string): Step[] | undefined {
  let rest = text.trim();
  if (rest.startsWith('{') && rest.endsWith('}')) rest = rest.slice(1, -1).trim();
  if (rest.startsWith('$')) rest = rest.slice(1);
  const steps: Step[] = [];
  while (rest.length > 0) {
    let m: RegExpExecArray | null;
    if ((m = ALL.exec(rest))) steps.push({ all: true });
    else if ((m = FIELD.exec(rest))) steps.push({ field: m[1]! });
    else if ((m = QUOTED.exec(rest))) steps.push({ field: m[1]! });
    else if ((m = INDEX.exec(rest))) steps.push({ index: Number(m[1]) });
    else if ((m = FILTER.exec(rest)))
      steps.push({ filter: m[1]!.slice(1).split('.'), equal: m[2] === '==', value: m[3] ?? m[4] ?? m[5] ?? '' });
    else return undefined;
    rest = rest.slice(m[0].length);
  }
  return steps;
}

const isObj = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function at(value: unknown, keys: readonly string[]): unknown {
  let current = value;
  for (const key of keys) current = isObj(current) ? current[key] : undefined;
  return current;
}

/** evaluateJsonPath gives every value a parsed path selects in `root`, in document order. */
export function evaluateJsonPath(steps: readonly Step[], root: unknown): unknown[] {
  let values: unknown[] = [root];
  for (const step of steps) {
    const next: unknown[] = [];
    for (const value of values) {
      if ('field' in step) {
        if (isObj(value) && value[step.field] !== undefined) next.push(value[step.field]);
      } else if ('index' in step) {
        if (Array.isArray(value)) {
          const item = value[step.index < 0 ? value.length + step.index : step.index];
          if (item !== undefined) next.push(item);
        }
      } else if ('all' in step) {
        if (Array.isArray(value)) next.push(...value);
        else if (isObj(value)) next.push(...Object.values(value));
      } else if (Array.isArray(value)) {
        for (const item of value) {
          const found = at(item, step.filter);
          if (found === undefined) continue;
          const same = String(found) === step.value;
          if (same === step.equal) next.push(item);
        }
      }
    }
    values = next;
  }
  return values;
}
