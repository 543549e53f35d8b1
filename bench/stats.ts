/** percentile is the p-th percentile of `xs` (nearest rank; p in 0–100); with few samples p99 is the largest. */
export const percentile = (xs: readonly number[], p: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

/** median is the 50th percentile. */
export const median = (xs: readonly number[]): number => percentile(xs, 50);
