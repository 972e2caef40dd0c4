import { chmod, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../test/support/temp-dir.js';
import { createJobStore, JOB_FILES } from './store.js';
import { newJobRecord } from './record.js';

function record(id: string, task = 'do it') {
  return newJobRecord({
    id,
    task,
    cwd: '/w',
    isolation: 'none',
    permissionMode: 'acceptEdits',
    maxTurns: 5,
    timeoutS: 60,
  });
}

const modeOf = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;

describe('createJobStore', () => {
  it('keeps the state tree the user’s alone: directories 0700, files 0600, an open old root closed', async () => {
    const root = await tempDir();
    // As an earlier version left it: readable to everyone.
    await chmod(root, 0o755);
    const store = createJobStore(root);
    const id = '20261129-000000-cccc';
    await store.save(record(id));
    await store.write(id, JOB_FILES.task, 'the brief\n');
    const appender = store.open(id, JOB_FILES.transcript);
    appender.write('line\n');
    await appender.close();
    expect(await modeOf(root)).toBe(0o700);
    expect(await modeOf(join(root, 'jobs'))).toBe(0o700);
    expect(await modeOf(store.jobDir(id))).toBe(0o700);
    for (const file of [JOB_FILES.record, JOB_FILES.task, JOB_FILES.transcript]) {
      expect(await modeOf(join(store.jobDir(id), file)), file).toBe(0o600);
    }
  });

  it('writes a whole text file of a job, replacing it, with no temp file left', async () => {
    const store = createJobStore(await tempDir());
    const id = '20261129-000000-bbbb';
    await store.write(id, JOB_FILES.task, 'first\n');
    await store.write(id, JOB_FILES.task, 'Write hello.txt.\n');
    expect(await readFile(join(store.jobDir(id), JOB_FILES.task), 'utf8')).toBe(
      'Write hello.txt.\n',
    );
    expect(await readdir(store.jobDir(id))).toEqual([JOB_FILES.task]);
    await expect(store.write('../x', JOB_FILES.task, 'x')).rejects.toThrow(/not a job id/);
  });

  it('writes job.json atomically and reads it back', async () => {
    const store = createJobStore(await tempDir());
    await store.save(record('20261129-000000-aaaa'));
    const read = await store.read('20261129-000000-aaaa');
    expect(read.task).toBe('do it');
    expect(read.status).toBe('queued');
    const files = await readdir(store.jobDir('20261129-000000-aaaa'));
    expect(files).toEqual([JOB_FILES.record]);
  });

  it('keeps the last of several quick saves', async () => {
    const store = createJobStore(await tempDir());
    const id = '20261129-000000-bbbb';
    await Promise.all(['a', 'b', 'c', 'd'].map((task) => store.save(record(id, task))));
    expect((await store.read(id)).task).toBe('d');
  });

  it('lists jobs oldest first and skips folders without a record', async () => {
    const state = await tempDir({ 'jobs/20261129-000000-zzzz/transcript.txt': 'x' });
    const store = createJobStore(state);
    await store.save(record('20261129-000002-aaaa'));
    await store.save(record('20261129-000001-aaaa'));
    expect((await store.list()).records.map((job) => job.id)).toEqual([
      '20261129-000001-aaaa',
      '20261129-000002-aaaa',
    ]);
  });

  it('lists two jobs of the same second in the order they were created, whatever their suffixes', async () => {
    const store = createJobStore(await tempDir());
    const earlier = { ...record('20261129-000001-zzzz'), created_at: '2026-11-29T00:00:01.100Z' };
    const later = { ...record('20261129-000001-aaaa'), created_at: '2026-11-29T00:00:01.900Z' };
    await store.save(later);
    await store.save(earlier);
    expect((await store.list()).records.map((job) => job.id)).toEqual([earlier.id, later.id]);
  });

  it.each([
    ['empty', '', /it is empty/],
    ['truncated', '{"version": 1, "id": "2026', /it is not JSON/],
    ['of another shape', '{"version": 7}', /it is not a job record \(version: /],
  ])(
    'reports a %s job.json as damaged, by job and file with a fix, and lists the others',
    async (_what, text, problem) => {
      const root = await tempDir();
      const store = createJobStore(root);
      const good = '20261129-000000-aaaa';
      const bad = '20261129-000001-bbbb';
      await store.save(record(good));
      await mkdir(store.jobDir(bad), { recursive: true });
      await writeFile(join(store.jobDir(bad), JOB_FILES.record), text);
      // A folder still being created (no job.json yet) is neither a job nor damaged.
      await mkdir(store.jobDir('20261129-000002-cccc'), { recursive: true });

      const listing = await store.list();
      expect(listing.records.map((job) => job.id)).toEqual([good]);
      expect(listing.damaged).toEqual([
        {
          id: bad,
          file: join(store.jobDir(bad), JOB_FILES.record),
          problem: expect.stringMatching(problem) as unknown,
          fix: expect.stringContaining(
            `mv ${store.jobDir(bad)} ${store.jobDir(bad)}.damaged`,
          ) as unknown,
        },
      ]);
      await expect(store.read(bad)).rejects.toMatchObject({
        code: 'RECORD_DAMAGED',
        message: expect.stringMatching(
          new RegExp(`^job ${bad}: .*job\\.json is damaged`),
        ) as unknown,
      });
    },
  );

  it('answers JOB_NOT_FOUND for an unknown id and rejects path traversal', async () => {
    const store = createJobStore(await tempDir());
    await expect(store.read('20261129-000000-cccc')).rejects.toMatchObject({
      code: 'JOB_NOT_FOUND',
    });
    await expect(store.read('../../etc')).rejects.toMatchObject({ code: 'BAD_ARGUMENT' });
  });

  it('appends in order and returns the tail of a file', async () => {
    const store = createJobStore(await tempDir());
    const id = '20261129-000000-dddd';
    await store.save(record(id));
    const log = store.open(id, JOB_FILES.transcript);
    for (let i = 1; i <= 5; i += 1) log.write(`line ${i}\n`);
    await log.close();
    expect(await readFile(join(store.jobDir(id), JOB_FILES.transcript), 'utf8')).toBe(
      'line 1\nline 2\nline 3\nline 4\nline 5\n',
    );
    expect(await store.tail(id, JOB_FILES.transcript, 2)).toBe('line 4\nline 5');
    expect(await store.tail(id, JOB_FILES.events, 2)).toBe('');
  });

  it('returns the tail of a file larger than its read window', async () => {
    const store = createJobStore(await tempDir());
    const id = '20261129-000000-eeee';
    await store.save(record(id));
    const log = store.open(id, JOB_FILES.transcript);
    for (let i = 1; i <= 20_000; i += 1) log.write(`line ${i} ${'x'.repeat(40)}\n`);
    await log.close();
    expect(await store.tail(id, JOB_FILES.transcript, 2)).toBe(
      `line 19999 ${'x'.repeat(40)}\nline 20000 ${'x'.repeat(40)}`,
    );
  });
});
