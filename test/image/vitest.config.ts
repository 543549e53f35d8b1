/**
 * `npm run test:image`: the image under a real OCI runtime (test/image/container.image.ts), on its own: it needs
 * root, runc, umoci and the archive `npm run image` makes, and takes a minute or two, so `npm test` leaves it out
 * (its files are not *.test.ts).
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    include: ['test/image/**/*.image.ts'],
    fileParallelism: false,
    setupFiles: ['test/support/xstate-warnings.ts'],
    testTimeout: 300_000,
    hookTimeout: 60_000,
  },
});
