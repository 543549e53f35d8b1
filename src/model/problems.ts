import type { Problem } from './nginx-model.js';

/**
 * formatProblem prints a problem as `namespace/name: field: message` (the CLI's, the logs' and the Events' spelling).
 */
export function formatProblem(problem: Problem): string {
  const who = problem.namespace ? `${problem.namespace}/${problem.name}` : problem.name;
  return `${who}: ${problem.field}: ${problem.message}`;
}
