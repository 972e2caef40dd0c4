import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['src/**/*.test.ts', 'test/*.test.ts'],
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          testTimeout: 120_000,
          hookTimeout: 60_000,
          // Real `claude` processes: two cores, so keep the parallelism modest.
          maxWorkers: 2,
        },
      },
    ],
    benchmark: {
      include: ['bench/**/*.bench.ts'],
    },
  },
});
