/** Tells a stream's relay when its backend has been silent too long (see watchSilence). */
export interface SilenceWatch {
  /** Something went through: the silence starts again. */
  touch(): void;
  stop(): void;
}

/**
 * Calls `onSilence` once `silenceMs` have passed without a `touch()`, and again after each further `silenceMs` of
 * silence; never sooner, at most half a period later. A timer that ticks every half period and compares a count
 * of touches, so a touch (every chunk of a stream) is an increment, not a timer re-armed: re-arming reads the
 * loop's clock and relinks the timer list, a cost each chunk of every stream would pay.
 */
export function watchSilence(silenceMs: number, onSilence: () => void): SilenceWatch {
  let touches = 0;
  let seen = 0;
  let quietHalves = 0;
  const timer = setTimeout(
    function tick() {
      if (touches !== seen) {
        seen = touches;
        quietHalves = 0;
      } else if (++quietHalves >= 2) {
        quietHalves = 0;
        onSilence();
      }
      timer.refresh();
    },
    Math.max(1, silenceMs / 2),
  );
  return {
    touch: () => {
      touches++;
    },
    stop: () => clearTimeout(timer),
  };
}
