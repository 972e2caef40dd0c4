import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['src/**/*.test.ts', 'test/*.test.ts'],
          sequence: { groupOrder: 0 },
          // Benchmarks live in one project so `vitest bench` runs each file once.
          benchmark: { include: ['bench/**/*.bench.ts'] },
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          testTimeout: 120_000,
          hookTimeout: 60_000,
          // Real `claude` processes on two cores: keep the parallelism modest, and run after the unit tests.
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
          benchmark: { include: [] },
        },
      },
    ],
  },
});
