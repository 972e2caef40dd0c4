import { afterEach } from 'vitest';
import type { Emulator } from '../../src/emulator/emulator.js';

/**
 * For a file whose tests share one emulator: after each test, pending faults are dropped and held
 * requests let go, so no test's faults or hangs reach the next one.
 */
export function resetEmulatorAfterEach(emulator: () => Emulator | undefined): void {
  afterEach(() => {
    emulator()?.injectFaults([]);
    emulator()?.releaseHolds();
  });
}
