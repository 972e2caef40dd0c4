import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { tempDir } from '../../test/support/temp-dir.js';
import { waitFor } from '../../test/support/wait.js';
import { newJobRecord } from '../jobs/record.js';
import { createJobStore, JOB_FILES } from '../jobs/store.js';
import type { JobView } from './job-view.js';
import { createJobsFeed } from './jobs-feed.js';
import type { RequestPoint } from './request-point.js';

const record = (id: string) => ({
  ...newJobRecord({
    id,
    task: 'Write hello.txt',
    cwd: '/w',
    isolation: 'none',
    permissionMode: 'acceptEdits',
    maxTurns: 5,
    timeoutS: 60,
  }),
  owner_pid: process.pid,
});

const requestLine = (seq: number) =>
  `${JSON.stringify({ kind: 'request', ts: new Date().toISOString(), seq, path: '/v1/messages', status: 200, ms: 5 })}\n`;

async function feedOn(stateDir: string) {
  const store = createJobStore(stateDir);
  const feed = await createJobsFeed(store);
  onTestFinished(() => feed.close());
  return { store, feed };
}

describe('createJobsFeed', () => {
  it('lists the jobs already there and sees new ones and their changes as they are written', async () => {
    const stateDir = await tempDir();
    const writer = createJobStore(stateDir);
    await writer.save({ ...record('20261201-100000-aaaa'), status: 'succeeded' });
    const { feed } = await feedOn(stateDir);
    expect(feed.list().map((view) => view.id)).toEqual(['20261201-100000-aaaa']);

    const seen: JobView[] = [];
    feed.subscribe((view) => seen.push(view));
    // Another process's store: only the files on disk connect the two.
    const job = record('20261201-100001-bbbb');
    await writer.save(job);
    await waitFor(() => seen.some((view) => view.id === job.id), { what: 'the new job' });
    await writer.save({ ...job, status: 'running', turns: 2 });
    await waitFor(() => seen.some((view) => view.id === job.id && view.status === 'running'), {
      what: 'the running record',
    });
    await writer.save({ ...job, status: 'succeeded', turns: 3 });
    await waitFor(() => seen.some((view) => view.status === 'succeeded' && view.turns === 3), {
      what: 'the final record',
    });
    expect(feed.list().map((view) => [view.id, view.status])).toEqual([
      [job.id, 'succeeded'],
      ['20261201-100000-aaaa', 'succeeded'],
    ]);
    // An unchanged record rewritten is not news.
    const count = seen.length;
    await writer.save({ ...job, status: 'succeeded', turns: 3 });
    await writer.save({ ...job, status: 'succeeded', turns: 3 });
    expect(seen.length).toBe(count);
  });

  it("follows one job's requests and transcript as they grow, and its record until it ends", async () => {
    const stateDir = await tempDir();
    const { store, feed } = await feedOn(stateDir);
    const job = { ...record('20261201-100002-cccc'), status: 'running' as const };
    await store.save(job);
    const dir = store.jobDir(job.id);
    await writeFile(join(dir, JOB_FILES.transcript), '=== job start\n');
    await writeFile(join(dir, JOB_FILES.requests), requestLine(1));

    const points: RequestPoint[] = [];
    const transcript: string[] = [];
    const records: JobView[] = [];
    const stop = await feed.follow(job.id, {
      onJob: (view) => records.push(view),
      onRequests: (batch) => points.push(...batch),
      onTranscript: (lines) => transcript.push(...lines),
    });
    expect(stop).toBeDefined();
    await waitFor(() => points.length === 1 && transcript.length === 1, {
      what: 'the first lines',
    });
    expect(records[0]?.status).toBe('running');

    await appendFile(join(dir, JOB_FILES.requests), requestLine(2) + requestLine(3));
    await appendFile(join(dir, JOB_FILES.transcript), 'tool Write(hello.txt)\n');
    await waitFor(() => points.length === 3, { what: 'appended requests' });
    await waitFor(() => transcript.includes('tool Write(hello.txt)'), { what: 'appended line' });
    expect(points.map((point) => point.seq)).toEqual([1, 2, 3]);

    await store.save({ ...job, status: 'succeeded' });
    await waitFor(() => records.some((view) => view.status === 'succeeded'), { what: 'the end' });
    stop?.();
    await appendFile(join(dir, JOB_FILES.requests), requestLine(4));
    expect(points).toHaveLength(3);
  });

  it('has nothing to follow for an id that is not a job, or not one', async () => {
    const stateDir = await tempDir();
    const { feed } = await feedOn(stateDir);
    const listener = { onJob: () => {}, onRequests: () => {}, onTranscript: () => {} };
    expect(await feed.follow('../../etc', listener)).toBeUndefined();
    expect(await feed.follow('20261201-100003-dddd', listener)).toBeUndefined();
    // A folder still being created (no job.json yet) is not listed.
    await mkdir(join(stateDir, 'jobs', '20261201-100004-eeee'));
    expect(feed.list()).toEqual([]);
  });
});
