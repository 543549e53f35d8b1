/**
 * The per-host regex budget of the Gateway router (src/model/regex-budget.ts says why and how much): the router
 * tries a host's routes in turn, each with its path, header and query regexes, so one request can cost the sum of
 * them all. Walking a host's route matches oldest route first, a match whose regexes would take the host over
 * the budget is left out of that host, with a problem on its route and `PartiallyInvalid=True/UnsupportedValue` on
 * the route's parents (the spec's condition for a route served in part); the others, and the rest of it, stay.
 */
import type { Problem } from '../nginx-model.js';
import type { RouteStatus } from './routes.js';
import { cond } from './listeners.js';
import { regexBudgetMessage, RegexBudget } from '../regex-budget.js';
import { regexWeight } from '../regex-path.js';
import { byAge } from './precedence.js';
import type { Meta, RouteMatch } from './types.js';

/** An entry of a host's list: one match of one rule, with its route's metadata. */
interface Entry {
  readonly meta: Meta;
  readonly kind?: 'GRPCRoute';
  readonly ruleIndex: number;
  readonly matchIndex: number;
  readonly match: RouteMatch;
}

/** matchRegexes are the regexes the router runs for one match (as `^(?:…)$`). */
function matchRegexes(match: RouteMatch): string[] {
  return [
    ...(match.path.type === 'RegularExpression' ? [match.path.value] : []),
    ...[...match.headers, ...match.queryParams].flatMap((m) => (m.type === 'RegularExpression' ? [m.value] : [])),
  ];
}

/**
 * withinRegexBudget gives a host's entries (in their precedence order) without those that would take it over the
 * regex budget, oldest route first; each left-out match is a problem in `problems` (once per route field and host).
 */
export function withinRegexBudget<E extends Entry>(
  hostname: string | null,
  entries: readonly E[],
  problems: Problem[],
  reported: Map<string, string>,
): E[] {
  if (!entries.some((e) => matchRegexes(e.match).length > 0)) return [...entries];
  const budget = new RegexBudget();
  const left = new Set<E>();
  const byOwner = [...entries].sort(
    (a, b) => byAge(a.meta, b.meta) || a.ruleIndex - b.ruleIndex || a.matchIndex - b.matchIndex,
  );
  for (const entry of byOwner) {
    const regexes = matchRegexes(entry.match);
    const weight = regexes.reduce((sum, r) => sum + regexWeight(r, 'both'), 0);
    if (regexes.length === 0 || budget.admitsWeight(weight)) continue;
    left.add(entry);
    const field = `spec.rules[${entry.ruleIndex}].matches[${entry.matchIndex}]`;
    const { namespace, name } = entry.meta;
    const kind = entry.kind ?? 'HTTPRoute';
    const key = `${kind}/${namespace}/${name}/${field}/${hostname}`;
    if (reported.has(key)) continue;
    const host = hostname ?? '*';
    const message = regexBudgetMessage(host, `this match's ${regexes.length} regex(es)`, weight, budget.used);
    reported.set(key, `${field}: ${message}`);
    problems.push({ kind, namespace, name, field, message });
  }
  return left.size === 0 ? [...entries] : entries.filter((e) => !left.has(e));
}

/**
 * partiallyInvalid adds `PartiallyInvalid=True/UnsupportedValue` to every parent of each route `reported` (from
 * withinRegexBudget) names, with what was left out.
 */
export function partiallyInvalid(
  kind: 'HTTPRoute' | 'GRPCRoute',
  statuses: readonly RouteStatus[],
  reported: ReadonlyMap<string, string>,
): RouteStatus[] {
  if (reported.size === 0) return [...statuses];
  return statuses.map((status) => {
    const prefix = `${kind}/${status.namespace}/${status.name}/`;
    const messages = [...reported].filter(([key]) => key.startsWith(prefix)).map(([, message]) => message);
    if (messages.length === 0) return status;
    const message = [...new Set(messages)].join('; ');
    return {
      ...status,
      parents: status.parents.map((p) => ({
        ...p,
        conditions: [
          ...p.conditions,
          cond('PartiallyInvalid', true, 'UnsupportedValue', message, p.conditions[0]?.observedGeneration ?? 0),
        ],
      })),
    };
  });
}
