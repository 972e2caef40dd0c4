import { randomBytes } from 'node:crypto';
import { chmod, mkdir, rename, rm, writeFile } from 'node:fs/promises';

/**
 * The state tree is the user's alone: briefs, transcripts and whole request bodies live there. Directories are
 * created 0700 and files 0600 (a umask can only narrow these), so other local users read none of it.
 */
export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** `mkdir -p`, every directory it creates private. */
export async function mkdirPrivate(path: string): Promise<void> {
  await mkdir(path, { recursive: true, mode: PRIVATE_DIR_MODE });
}

/** The state directory: created private, and closed if an earlier version left it readable to others. */
export async function makePrivateRoot(path: string): Promise<void> {
  await mkdirPrivate(path);
  await chmod(path, PRIVATE_DIR_MODE);
}

/**
 * Writes a whole private file so that a reader sees the old content or the new, never half of one: a temp file
 * beside it (unique per process and call, so concurrent writers never share one), then rename. A failed
 * write leaves no temp file behind.
 */
export async function writeFileAtomic(path: string, data: string): Promise<void> {
  const temp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(temp, data, { mode: PRIVATE_FILE_MODE });
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true }).catch(() => undefined);
    throw error;
  }
}
