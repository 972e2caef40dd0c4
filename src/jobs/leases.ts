import { createHash } from 'node:crypto';
import { readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { mkdirPrivate, PRIVATE_FILE_MODE } from '../private-fs.js';

/**
 * Slot leases shared by every localagents process on this machine (two Claude Code windows, `run --detach`): a
 * job holds one slot of its endpoint from its start to its end, as a file under `<state>/leases/<endpoint>/`.
 * A numbered slot is taken by creating its file exclusively, so two processes never take the same one; a file
 * whose owner is gone (its pid no longer runs) is reaped by whoever looks next.
 */
export interface Lease {
  readonly file: string;
  release(): Promise<void>;
}

export interface LeaseStore {
  /** One of `slots` slots of the endpoint for this job; undefined when every one is held by a live owner. */
  tryAcquire(baseUrl: string, slots: number, job: string): Promise<Lease | undefined>;
  /** Leases held on the endpoint now, by every process (dead owners' reaped first). */
  held(baseUrl: string): Promise<number>;
}

interface LeaseOwner {
  pid: number;
  host: string;
  job: string;
  since: string;
}

function endpointDir(root: string, baseUrl: string): string {
  return join(root, createHash('sha256').update(baseUrl).digest('hex').slice(0, 16));
}

/** Whether the process that wrote a lease still runs (a lease from another host is taken at its word). */
function ownerAlive(owner: LeaseOwner): boolean {
  if (owner.host !== hostname()) return true;
  try {
    process.kill(owner.pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function readOwner(file: string): Promise<LeaseOwner | undefined> {
  try {
    const owner = JSON.parse(await readFile(file, 'utf8')) as Partial<LeaseOwner>;
    return typeof owner.pid === 'number' && typeof owner.job === 'string'
      ? { pid: owner.pid, host: owner.host ?? hostname(), job: owner.job, since: owner.since ?? '' }
      : undefined;
  } catch {
    return undefined;
  }
}

/** A lease file still unreadable after this long was left by a crash between its creation and its write. */
const HALF_WRITTEN_MS = 10_000;

async function olderThan(file: string, ms: number): Promise<boolean> {
  try {
    return Date.now() - (await stat(file)).mtimeMs > ms;
  } catch {
    return true;
  }
}

export function createLeaseStore(stateDir: string): LeaseStore {
  const root = join(stateDir, 'leases');

  /** The live leases' files; a lease whose owner is gone (or that cannot be read: half written) is removed. */
  const live = async (dir: string): Promise<string[]> => {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      return [];
    }
    const files = names.filter((name) => name.endsWith('.json')).map((name) => join(dir, name));
    const alive = await Promise.all(
      files.map(async (file) => {
        const owner = await readOwner(file);
        if (owner && ownerAlive(owner)) return true;
        // Unreadable is half written (its creator is between open and write), unless it stays so: a crash there.
        if (!owner && !(await olderThan(file, HALF_WRITTEN_MS))) return true;
        await rm(file, { force: true });
        return false;
      }),
    );
    return files.filter((_, index) => alive[index]);
  };

  const take = async (file: string, job: string): Promise<Lease | undefined> => {
    const owner: LeaseOwner = {
      pid: process.pid,
      host: hostname(),
      job,
      since: new Date().toISOString(),
    };
    try {
      await writeFile(file, JSON.stringify(owner), { flag: 'wx', mode: PRIVATE_FILE_MODE });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
      throw error;
    }
    return { file, release: () => rm(file, { force: true }) };
  };

  return {
    async tryAcquire(baseUrl, slots, job) {
      const dir = endpointDir(root, baseUrl);
      await mkdirPrivate(dir);
      const held = new Set(await live(dir));
      if (slots === Number.POSITIVE_INFINITY) return take(join(dir, `job-${job}.json`), job);
      for (let slot = 0; slot < slots; slot++) {
        const file = join(dir, `slot-${slot}.json`);
        if (held.has(file)) continue;
        const lease = await take(file, job);
        if (lease) return lease;
      }
      return undefined;
    },
    async held(baseUrl) {
      return (await live(endpointDir(root, baseUrl))).length;
    },
  };
}
