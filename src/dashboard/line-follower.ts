import { open } from 'node:fs/promises';
import { coalesce } from '../coalesce.js';

/** At most this much of the end of a file is read when following starts from its tail. */
const TAIL_BYTES = 256 * 1024;
/** Read in chunks of this size: a 10 MB log never sits whole in memory. */
const CHUNK_BYTES = 64 * 1024;

export interface LineFollower {
  /** Read what was appended since the last read; the caller calls it when the file may have grown. */
  poke(): void;
  /** Resolves once every poke so far has been read (tests, and the last read after a job ended). */
  settled(): Promise<void>;
  close(): void;
}

/**
 * Follows an append-only file (requests.jsonl, transcript.txt) by offset, handing over complete lines only; a
 * line still being written waits for its newline. Reads never overlap, and a poke during a read reads again
 * after it, so nothing appended is missed. A missing file is empty until it appears. `fromTail` starts at the
 * last TAIL_BYTES (at a line start) instead of the beginning.
 */
export function followLines(
  path: string,
  onLines: (lines: string[]) => void,
  options: { fromTail?: boolean } = {},
): LineFollower {
  let offset: number | undefined = options.fromTail ? undefined : 0;
  let partial = '';
  let closed = false;

  const readOnce = async (): Promise<void> => {
    const handle = await open(path, 'r').catch(() => undefined);
    if (!handle) return;
    try {
      const { size } = await handle.stat();
      let skipToLine = false;
      if (offset === undefined) {
        offset = Math.max(0, size - TAIL_BYTES);
        skipToLine = offset > 0;
      }
      // Truncated or replaced under us: start over rather than read past the end forever.
      if (size < offset) {
        offset = 0;
        partial = '';
      }
      const buffer = Buffer.alloc(CHUNK_BYTES);
      while (offset < size && !closed) {
        const { bytesRead } = await handle.read(
          buffer,
          0,
          Math.min(CHUNK_BYTES, size - offset),
          offset,
        );
        if (bytesRead === 0) break;
        offset += bytesRead;
        // Lines are cut at '\n' only, so a multi-byte character split between chunks is rejoined in `partial`
        // before it is decoded: the text is decoded per line, not per chunk.
        partial += buffer.subarray(0, bytesRead).toString('latin1');
        const end = partial.lastIndexOf('\n');
        if (end < 0) continue;
        let lines = partial.slice(0, end).split('\n');
        partial = partial.slice(end + 1);
        if (skipToLine) {
          lines = lines.slice(1);
          skipToLine = false;
        }
        const decoded = lines.map((line) => Buffer.from(line, 'latin1').toString('utf8'));
        if (decoded.length > 0 && !closed) onLines(decoded);
      }
    } finally {
      await handle.close();
    }
  };

  const reads = coalesce(readOnce);

  return {
    poke() {
      if (!closed) reads.trigger();
    },
    settled: () => reads.settled(),
    close() {
      closed = true;
    },
  };
}
