import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { startEmulator, type Emulator } from '../../src/emulator/emulator.js';
import { callTool, startTestApp } from '../support/mcp-client.js';
import { tempDir } from '../support/temp-dir.js';
import { refusedPort } from './registry-support.js';

/**
 * A user of the Python original points `claude mcp add` at their models.yaml and keeps working: its example
 * configuration (test/fixtures/original/models.yaml), unchanged but for where the servers listen. `desk` is a
 * llama-server serving a quantised 27B, `big` a vLLM on another box serving the MoE and the large model with
 * speculative decoding, `box` (the MoE's preferred endpoint) and `laptop` (an Ollama) are down.
 */
const DESK_MODEL = 'org/Coder-27B-GGUF:Q4_K_M';

let desk: Emulator;
let big: Emulator;
beforeAll(async () => {
  desk = await startEmulator({
    servedNames: [DESK_MODEL],
    nCtx: 262144,
    nCtxTrain: 262144,
    parallel: 2,
    metrics: true,
  });
  big = await startEmulator({
    backend: 'vllm',
    servedNames: ['coder-moe', 'org/Flash-Large-FP8'],
    toolChoice: true,
    nCtx: 131072,
    speculative: { numSpeculativeTokens: 4, acceptanceRate: 0.75 },
  });
});
afterAll(async () => {
  await desk.close();
  await big.close();
});

/** The original's example with each endpoint's base_url replaced, and nothing else touched. */
async function originalConfig(urls: Record<string, string>): Promise<string> {
  const text = await readFile(new URL('../fixtures/original/models.yaml', import.meta.url), 'utf8');
  const doc = parseDocument(text);
  for (const [name, url] of Object.entries(urls)) doc.setIn(['endpoints', name, 'base_url'], url);
  return doc.toString();
}

interface MenuEntry {
  name: string;
  available: boolean;
  endpoint?: string;
  served_model?: string;
  context?: number;
  tags?: string[];
}

describe("the Python original's example models.yaml", () => {
  it('lists, resolves, runs, waits, completes and registers as a user of the original expects', async () => {
    const config = await originalConfig({
      desk: desk.url,
      box: await refusedPort(),
      big: big.url,
      laptop: await refusedPort(),
    });
    const cwd = await tempDir();
    const { client, app } = await startTestApp(config, { cwd });

    // list_models: the original's fields, every menu entry resolved by the same rules as run_agent.
    const listed = await callTool(client, 'list_models');
    expect(listed).toMatchObject({ server_cwd: cwd, default_model: 'coder-27b' });
    expect(listed.config).toMatchObject({ ok: true });
    // The original's `backend: ollama` is probed as Ollama (here: nothing listens on its port).
    expect(JSON.stringify(listed.config)).not.toContain('probed like other');
    const endpoints = listed.endpoints as Array<{ name: string; up: boolean }>;
    expect(endpoints.map(({ name, up }) => [name, up])).toEqual([
      ['desk', true],
      ['box', false],
      ['big', true],
      ['laptop', false],
    ]);
    const menu = Object.fromEntries(
      (listed.models as MenuEntry[]).map((entry) => [entry.name, entry]),
    );
    expect(menu['coder-27b']).toMatchObject({
      available: true,
      endpoint: 'desk',
      served_model: DESK_MODEL,
      context: 131072,
      tags: ['coding', 'tools', 'local'],
    });
    // Its preferred endpoint (box) is down; big serves it.
    expect(menu['coder-moe']).toMatchObject({
      available: true,
      endpoint: 'big',
      served_model: 'coder-moe',
    });
    // host: big-box is where it runs, not a filter; its 65536 is less than vLLM's 131072, so it is honoured.
    expect(menu['flash-large']).toMatchObject({
      available: true,
      endpoint: 'big',
      served_model: 'org/Flash-Large-FP8',
      context: 65536,
    });

    expect(await callTool(client, 'request_model', { model: 'flash-large' })).toMatchObject({
      available: true,
      endpoint: 'big',
      served_model: 'org/Flash-Large-FP8',
      context: 65536,
    });
    const missing = await callTool(client, 'request_model', { model: 'glm-9' });
    expect(missing).toMatchObject({ error: 'model_unavailable', model: 'glm-9' });
    expect(String(missing.message)).toMatch(/^'glm-9' is not running anywhere\. Ask the user/);

    // run_agent by menu name: coder-moe's own max_turns, on the endpoint that serves it.
    const started = await callTool(client, 'run_agent', {
      task: 'Write hello.txt and show it.',
      model: 'coder-moe',
      cwd,
    });
    const id = String(started.id);
    // The original's default wait: accepted, and answered within what Claude Code waits for a tool.
    const waited = await callTool(client, 'wait_job', { job_id: id, timeout_s: 120 });
    expect(waited.status).toBe('succeeded');
    expect(await readFile(`${cwd}/hello.txt`, 'utf8')).toBe('hello from the local model\n');
    const record = await app.store.read(id);
    expect(record).toMatchObject({
      endpoint: 'big',
      served_model: 'coder-moe',
      max_turns: 40,
      requested_model: 'coder-moe',
    });
    // vLLM's spec_decode counters over the job: 4 draft tokens a step, three in four accepted.
    expect(record.backend?.spec_decode).toMatchObject({ acceptance_rate: 0.75 });

    // list_jobs with no arguments shows finished jobs, as the original did.
    const jobs = (await callTool(client, 'list_jobs')).jobs as Array<{ id: string }>;
    expect(jobs.map((job) => job.id)).toContain(id);

    // local_complete: the default model, max_tokens 4096 by default.
    const completed = await callTool(client, 'local_complete', { prompt: 'Say hello.' });
    expect(completed).toMatchObject({ endpoint: 'desk', model: DESK_MODEL });
    expect(String(completed.text).length).toBeGreaterThan(0);
    const sent = desk.requests.filter((request) => request.path.startsWith('/v1/messages')).at(-1);
    expect(sent?.body).toMatchObject({ max_tokens: 4096 });

    // register_endpoint writes models.local.yaml and answers with a probe of it.
    const registered = await callTool(client, 'register_endpoint', {
      name: 'spare',
      base_url: desk.url,
      backend: 'llama.cpp',
    });
    expect(registered).toMatchObject({
      ok: true,
      endpoint: 'spare',
      probe: { up: true, models: [DESK_MODEL] },
    });

    // An endpoint argument the file does not have: a wrong argument, with the known names.
    expect(
      await callTool(client, 'run_agent', { task: 'x', model: 'coder-27b', endpoint: 'nope' }),
    ).toMatchObject({
      error: 'unknown_endpoint',
      known_endpoints: ['desk', 'box', 'big', 'laptop', 'spare'],
    });
  });
});
