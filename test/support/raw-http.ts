/**
 * HTTP/1.1 at the byte level, for comparing the emulator with the raw socket captures (A49, A50):
 * fetch() hides the status line, the chunk boundaries and hop-by-hop headers, these do not.
 */
import { connect } from 'node:net';

export interface RawResponse {
  statusLine: string;
  /** In arrival order, names as sent. */
  headers: [string, string][];
  /** The de-chunked body. */
  body: Buffer;
  /** Each chunk's payload in order (the terminating empty chunk included); undefined when not chunked. */
  chunks: Buffer[] | undefined;
}

/**
 * Writes `request` as-is to the server behind `url` and reads until the server closes (the captured
 * requests say `Connection: close`). The socket is not half-closed: node:http would abort the request.
 */
export async function sendRaw(url: string, request: Buffer): Promise<Buffer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    const socket = connect({ host: hostname, port: Number(port) }, () => {
      socket.write(request);
    });
    socket.on('data', (part: Buffer) => parts.push(part));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(parts)));
  });
}

const CRLF = Buffer.from('\r\n');

/**
 * `sizes: 'declared'` trusts each chunk's size line (for what the emulator sends); `'crlf'` ends a
 * chunk at the next CRLF instead, for captures edited after recording (an SSE body has only LF line
 * ends, so a CRLF there is framing).
 */
export type ChunkSizes = 'declared' | 'crlf';

function dechunk(bytes: Buffer, sizes: ChunkSizes): Buffer[] {
  const chunks: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const lineEnd = bytes.indexOf(CRLF, offset);
    if (lineEnd < 0) throw new Error(`chunk size line missing at byte ${offset}`);
    const declared = Number.parseInt(bytes.subarray(offset, lineEnd).toString('latin1'), 16);
    if (Number.isNaN(declared)) throw new Error(`bad chunk size at byte ${offset}`);
    const start = lineEnd + 2;
    const size = sizes === 'crlf' && declared > 0 ? bytes.indexOf(CRLF, start) - start : declared;
    chunks.push(bytes.subarray(start, start + size));
    if (!bytes.subarray(start + size, start + size + 2).equals(CRLF))
      throw new Error(`chunk at byte ${offset} is not followed by CRLF`);
    offset = start + size + 2;
    if (size === 0) return chunks;
  }
}

export function parseRawResponse(bytes: Buffer, sizes: ChunkSizes = 'declared'): RawResponse {
  const headEnd = bytes.indexOf('\r\n\r\n');
  if (headEnd < 0) throw new Error('no end of headers in the response');
  const [statusLine = '', ...lines] = bytes.subarray(0, headEnd).toString('latin1').split('\r\n');
  const headers = lines.map((line): [string, string] => {
    const colon = line.indexOf(':');
    return [line.slice(0, colon), line.slice(colon + 1).trim()];
  });
  const rest = bytes.subarray(headEnd + 4);
  const chunked = headers.some(
    ([name, value]) => name.toLowerCase() === 'transfer-encoding' && value === 'chunked',
  );
  if (!chunked) return { statusLine, headers, body: rest, chunks: undefined };
  const chunks = dechunk(rest, sizes);
  return { statusLine, headers, body: Buffer.concat(chunks), chunks };
}

/** Headers as a name (lower case) → value map. */
export function headerMap(headers: readonly [string, string][]): Map<string, string> {
  return new Map(headers.map(([name, value]) => [name.toLowerCase(), value]));
}
