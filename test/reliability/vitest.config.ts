/**
 * `npm run test:reliability`: the reliability suite alone, one file at a time (each runs a
 * controller and nginx, and their timings should not compete), with the reporter that ends the
 * run with `reliability: N faults, N survived, N requests, N lost`.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { ReliabilityReporter } from './reporter.js';

const results = join(tmpdir(), `ia-reliability-results-${process.pid}`);

export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    include: ['test/reliability/**/*.test.ts'],
    fileParallelism: false,
    setupFiles: ['test/support/xstate-warnings.ts'],
    testTimeout: 900_000,
    hookTimeout: 120_000,
    env: { RELIABILITY_RESULTS: results },
    reporters: ['default', new ReliabilityReporter(results)],
  },
});
