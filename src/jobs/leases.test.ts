import { readdir, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../test/support/temp-dir.js';
import { createLeaseStore } from './leases.js';

const URL_A = 'http://127.0.0.1:8080';

describe('createLeaseStore', () => {
  it('gives out each slot once, across stores (processes) sharing a state directory', async () => {
    const state = await tempDir();
    const one = createLeaseStore(state);
    const two = createLeaseStore(state);
    const first = await one.tryAcquire(URL_A, 2, 'j1');
    const second = await two.tryAcquire(URL_A, 2, 'j2');
    expect(first).toBeDefined();
    expect(second).toBeDefined();
    expect(await one.tryAcquire(URL_A, 2, 'j3')).toBeUndefined();
    expect(await two.held(URL_A)).toBe(2);
    await first?.release();
    expect(await one.held(URL_A)).toBe(1);
    expect(await two.tryAcquire(URL_A, 2, 'j3')).toBeDefined();
    // Another endpoint has slots of its own.
    expect(await one.tryAcquire('http://127.0.0.1:8081', 1, 'j4')).toBeDefined();
  });

  it('reaps a lease whose owner is gone', async () => {
    const state = await tempDir();
    const leases = createLeaseStore(state);
    const lease = await leases.tryAcquire(URL_A, 1, 'mine');
    // Above any pid_max (2^22 on Linux): no process has it.
    const dead = 99_999_999;
    const dir = join(state, 'leases', (await readdir(join(state, 'leases')))[0] ?? '');
    await lease?.release();
    await writeFile(
      join(dir, 'slot-0.json'),
      JSON.stringify({ pid: dead, host: hostname(), job: 'gone', since: '' }),
    );
    expect(await leases.held(URL_A)).toBe(0);
    expect(await leases.tryAcquire(URL_A, 1, 'next')).toBeDefined();
  });

  it('counts unbounded leases (a server that sets no bound) one file per job', async () => {
    const leases = createLeaseStore(await tempDir());
    await leases.tryAcquire(URL_A, Number.POSITIVE_INFINITY, 'a');
    await leases.tryAcquire(URL_A, Number.POSITIVE_INFINITY, 'b');
    expect(await leases.held(URL_A)).toBe(2);
  });
});
