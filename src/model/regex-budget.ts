/**
 * The per-host regex budget. nginx tries a host's regex locations one after another on every request until
 * one matches, and the Gateway router tries every regex of a host's routes in turn, so what one request can
 * cost is the sum over the host's regexes, whoever wrote them. Each regex is linear in the subject
 * (regex-cost.ts), with a factor its weight (regexWeight: one, plus the states reachable from a repeat); the
 * budget bounds the sum per host. A request's subject is at most one 8 KiB header buffer (the request line,
 * a header, the query string: large_client_header_buffers), so a host at the budget costs at most about
 * 8 Ki × MAX_REGEX_WEIGHT_PER_HOST ≈ 2 M backtracking steps, a few milliseconds of one worker with PCRE2's JIT
 * (bench/regex-host.ts measures it). 256 still holds, say, 85 paths like `/api/v[0-9]+/.*` or 256 like
 * `/foo(/|$)(.*)`. The oldest objects keep theirs; the regex that would go over is left out, with a problem.
 */
import type { Route } from './locations.js';
import { regexWeight } from './regex-path.js';
import { show } from './validate.js';

/** MAX_REGEX_WEIGHT_PER_HOST bounds the summed regexWeight of the regexes one host tries on a request. */
export const MAX_REGEX_WEIGHT_PER_HOST = 256;

/** RegexBudget adds up one host's regex weights, in the order their objects are settled (oldest first). */
export class RegexBudget {
  /** the weight used by the regexes admitted so far */
  used = 0;
  /** the weight of the last regex asked about */
  weight = 0;

  /** admitsWeight takes `weight` from the budget if it fits, and says whether it did. */
  admitsWeight(weight: number): boolean {
    this.weight = weight;
    if (this.used + weight > MAX_REGEX_WEIGHT_PER_HOST) return false;
    this.used += weight;
    return true;
  }
}

/** IngressRegexBudget is a host's budget for Ingress routes: only regex (use-regex) paths take from it. */
export class IngressRegexBudget extends RegexBudget {
  /** admits takes a route's weight if it is a regex path; other paths always fit. */
  admits(route: Route): boolean {
    return route.pathType !== 'ImplementationSpecific' || this.admitsWeight(regexWeight(route.path, 'start'));
  }
}

/** regexBudgetMessage is the problem of `what` (regexes of `weight`) left out of a host that is over its budget. */
export function regexBudgetMessage(host: string, what: string, weight: number, used: number): string {
  return (
    `host ${show(host)} already tries regexes of weight ${used} on every request (at most ` +
    `${MAX_REGEX_WEIGHT_PER_HOST}, the oldest objects first); ${what} would add ${weight}: left out`
  );
}
