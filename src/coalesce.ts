/**
 * Runs `task` one call at a time: a trigger while it runs schedules exactly one more run after it, so the last
 * change is always seen and reads never overlap. `settled()` resolves when no run is pending.
 */
export function coalesce(task: () => Promise<void>): { trigger(): void; settled(): Promise<void> } {
  let running: Promise<void> | undefined;
  let again = false;
  const run = (): Promise<void> =>
    task()
      .catch(() => undefined)
      .then(() => {
        if (!again) return;
        again = false;
        return run();
      });
  return {
    trigger() {
      if (running) {
        again = true;
        return;
      }
      running = run().finally(() => {
        running = undefined;
      });
    },
    async settled() {
      while (running) await running;
    },
  };
}
