import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname } from 'node:path';
import { LocalAgentsError } from '../errors.js';
import { isLoopbackHost, sameSecret } from '../local-door.js';
import { mkdirPrivate, writeFileAtomic } from '../private-fs.js';

/**
 * `serve` over HTTP is a door to run_agent, whose delegate runs Bash as the user: every request must carry the
 * bearer token, and no web page may use a browser as the key (Origin checked, as the MCP transport spec asks).
 */

const MIN_TOKEN_LENGTH = 16;

/** The token in `file`, or a new one written there 0600 (`created`: say it once, with how to use it). */
export async function loadOrCreateToken(
  file: string,
): Promise<{ token: string; created: boolean }> {
  const existing = await readFile(file, 'utf8').then(
    (text) => text.trim(),
    (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw new LocalAgentsError(
        'IO_FAILED',
        `cannot read the token file ${file}: ${error.message}`,
        {
          hint: 'make it readable, or name another with --token-file',
          cause: error,
        },
      );
    },
  );
  if (existing !== undefined) {
    if (existing.length < MIN_TOKEN_LENGTH) {
      throw new LocalAgentsError(
        'BAD_ARGUMENT',
        `the token in ${file} is shorter than ${MIN_TOKEN_LENGTH} characters`,
        { hint: `put a longer secret there, or delete the file to have one generated` },
      );
    }
    return { token: existing, created: false };
  }
  const token = randomBytes(32).toString('base64url');
  await mkdirPrivate(dirname(file));
  await writeFileAtomic(file, `${token}\n`);
  return { token, created: true };
}

function refuse(res: ServerResponse, status: number, message: string, fix: string): void {
  res.writeHead(status, {
    'content-type': 'application/json',
    ...(status === 401 ? { 'www-authenticate': 'Bearer realm="localagents"' } : {}),
  });
  res.end(`${JSON.stringify({ error: { message, fix } })}\n`);
}

function originHost(origin: string): string {
  try {
    return new URL(origin).hostname;
  } catch {
    return '';
  }
}

/**
 * True when the request may go on; otherwise it has been answered: 403 for a foreign Origin (a browser page on
 * another site), 401 without the token.
 */
export function authorize(req: IncomingMessage, res: ServerResponse, token: string): boolean {
  const origin = req.headers.origin;
  if (origin !== undefined) {
    if (!isLoopbackHost(originHost(origin))) {
      refuse(
        res,
        403,
        `requests from ${origin} are refused`,
        'call the MCP endpoint from a local client, not a web page',
      );
      return false;
    }
  }
  const header = req.headers.authorization ?? '';
  const given = header.startsWith('Bearer ') ? header.slice('Bearer '.length).trim() : '';
  if (!sameSecret(given, token)) {
    refuse(
      res,
      401,
      'the localagents MCP endpoint needs its bearer token',
      'register it with --header "Authorization: Bearer <token>" (the token is in the file serve printed at start)',
    );
    return false;
  }
  return true;
}
