import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The reliability suite runs on its own (`npm run test:reliability`, test/reliability/vitest.config.ts).
    exclude: [...configDefaults.exclude, 'test/reliability/**'],
    // A test during which xstate warns (an imperative custom action, an event to a stopped actor) fails.
    setupFiles: ['test/support/xstate-warnings.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Tests start real nginx processes on loopback ports; keep the two cores from oversubscribing.
    maxWorkers: 2,
  },
});
