import { describe, expect, it } from 'vitest';
import { redrawPrefix } from './status-line.js';

describe('redrawPrefix', () => {
  it('returns to the line start and clears it when the last line fitted', () => {
    expect(redrawPrefix(79, 80)).toBe('\r\u001b[K');
    expect(redrawPrefix(0, 80)).toBe('\r\u001b[K');
  });

  it('goes up to the first row of a line a narrower terminal rewrapped, and clears to the end', () => {
    // 79 columns shown, the terminal now 40 wide: two rows, the cursor on the second.
    expect(redrawPrefix(79, 40)).toBe('\u001b[1A\r\u001b[J');
    expect(redrawPrefix(120, 40)).toBe('\u001b[2A\r\u001b[J');
  });
});
