import { displayWidth } from './text-width.js';

/**
 * The escapes that bring the cursor back to the start of the status line and clear it. A line that
 * fitted is one row: CR, erase line. After the terminal narrowed, a reflowing terminal (tmux, VTE,
 * iTerm2, kitty, Windows Terminal) has rewrapped it into several rows with the cursor on the last: go
 * up to its first row and erase to the end of the screen, or its first rows would stay behind.
 */
export function redrawPrefix(previousWidth: number, columns: number): string {
  const rows = columns > 0 && previousWidth > columns ? Math.ceil(previousWidth / columns) : 1;
  return rows > 1 ? `\u001b[${rows - 1}A\r\u001b[J` : '\r\u001b[K';
}

export interface StatusLine {
  /** Draws the line `render` makes for the room it is given; redrawn with it when the terminal is resized. */
  show(render: (room: number) => string): void;
  /** Erases the line, leaving the cursor at the start of an empty row. */
  clear(): void;
  /** Erases the line and stops following resizes. */
  stop(): void;
}

/**
 * One status line redrawn in place on a TTY, never wider than the terminal (one column spare, so no
 * terminal wraps it): the 20-line equivalent of log-update for a single line, which also clears what
 * a narrowed terminal rewrapped.
 */
export function createStatusLine(stream: NodeJS.WriteStream): StatusLine {
  let render: ((room: number) => string) | undefined;
  let shownWidth = 0;
  const columns = (): number => (stream.columns > 0 ? stream.columns : 80);
  const draw = (): void => {
    if (!render) return;
    const width = columns();
    const line = render(Math.max(1, width - 1));
    stream.write(`${redrawPrefix(shownWidth, width)}${line}`);
    shownWidth = displayWidth(line);
  };
  const clear = (): void => {
    if (shownWidth > 0) stream.write(redrawPrefix(shownWidth, columns()));
    shownWidth = 0;
  };
  stream.on('resize', draw);
  return {
    show(next) {
      render = next;
      draw();
    },
    clear,
    stop() {
      stream.off('resize', draw);
      clear();
      render = undefined;
    },
  };
}
