import { describe, expect, it } from 'vitest';
import { tempDir } from '../../test/support/temp-dir.js';
import { waitFor } from '../../test/support/wait.js';
import { silentDiagnostics } from '../diagnostics.js';
import { builtinDefaults } from '../registry/config-defaults.js';
import type { EndpointProbe } from '../registry/probe.js';
import type { RegistrySnapshot } from '../registry/registry.js';
import { createLeaseStore } from './leases.js';
import { createScheduler, type Admission } from './scheduler.js';

/** One llama.cpp endpoint serving `models`, with `slots` slots of which `busy` are busy (someone else's). */
function endpoint(name: string, models: string[], slots: number, busy = 0): EndpointProbe {
  return {
    name,
    base_url: `http://${name}.invalid:8080`,
    backend: 'llama.cpp',
    up: true,
    status: 'ok',
    models,
    context: Object.fromEntries(models.map((model) => [model, 65536])),
    slots: { total: slots, busy, free: slots - busy, source: 'slots' },
    metrics: true,
    latency_ms: 1,
  };
}

function snapshotOf(probes: EndpointProbe[]): RegistrySnapshot {
  return {
    config: {
      ok: true,
      warnings: [],
      config: {
        defaults: builtinDefaults(),
        endpoints: probes.map((probe) => ({
          name: probe.name,
          base_url: probe.base_url,
          backend: probe.backend,
          env: {},
        })),
        models: [],
        agents: [],
        files: [],
      },
    },
    endpoints: probes,
    models: [],
  };
}

async function scheduler(probes: () => EndpointProbe[], graceMs = 60_000) {
  return createScheduler({
    snapshot: () => Promise.resolve(snapshotOf(probes())),
    leases: createLeaseStore(await tempDir()),
    inflight: () => 0,
    graceMs: () => Promise.resolve(graceMs),
    pollMs: 5,
    diagnostics: silentDiagnostics,
  });
}

function waiting(id: string, model: string, controller = new AbortController()) {
  const told: string[] = [];
  return {
    told,
    controller,
    waiting: {
      id,
      request: { model },
      signal: controller.signal,
      onWait: (position: number, reason: string) => told.push(`${position} ${reason}`),
    },
  };
}

describe('createScheduler', () => {
  it('admits as many jobs as there are free slots, the rest in order once slots free', async () => {
    const probes = [endpoint('desk', ['coder'], 1)];
    const queue = await scheduler(() => probes);
    const first = await queue.admit(waiting('j1', 'coder').waiting);
    expect(first).toMatchObject({ kind: 'admitted', resolution: { endpoint: { name: 'desk' } } });
    const second = waiting('j2', 'coder');
    const third = waiting('j3', 'coder');
    const admitted: string[] = [];
    const two = queue.admit(second.waiting).then((a) => (admitted.push('j2'), a));
    const three = queue.admit(third.waiting).then((a) => (admitted.push('j3'), a));
    await waitFor(() => third.told.length > 0, { what: 'the third job told its place' });
    expect(second.told.at(-1)).toBe('1 waiting for a free slot on desk (1/1 busy)');
    expect(third.told.at(-1)).toBe('2 waiting for a free slot on desk (1/1 busy)');
    if (first.kind === 'admitted') await first.lease.release();
    queue.wake();
    const got = await two;
    if (got.kind === 'admitted') await got.lease.release();
    queue.wake();
    await three;
    expect(admitted).toEqual(['j2', 'j3']);
    queue.close();
  });

  it('lets a job of another model pass a model that waits, and counts others’ busy slots', async () => {
    const probes = [endpoint('desk', ['coder'], 1, 1), endpoint('box', ['writer'], 1)];
    const queue = await scheduler(() => probes);
    const blocked = waiting('j1', 'coder');
    void queue.admit(blocked.waiting);
    expect(await queue.admit(waiting('j2', 'writer').waiting)).toMatchObject({
      kind: 'admitted',
      resolution: { endpoint: { name: 'box' } },
    });
    expect(blocked.told.at(-1)).toBe('1 waiting for a free slot on desk (1/1 busy)');
    queue.close();
  });

  it('puts a job on the endpoint with the most free slots among those serving it', async () => {
    const queue = await scheduler(() => [
      endpoint('a', ['coder'], 2, 1),
      endpoint('b', ['coder'], 2),
    ]);
    expect(await queue.admit(waiting('j1', 'coder').waiting)).toMatchObject({
      resolution: { endpoint: { name: 'b' } },
    });
    queue.close();
  });

  it('cancels a waiting job at once, and gives up on a model nothing serves after the grace period', async () => {
    const queue = await scheduler(() => [endpoint('desk', ['coder'], 1, 1)], 20);
    const controller = new AbortController();
    const cancelled = queue.admit(waiting('j1', 'coder', controller).waiting);
    controller.abort();
    expect(await cancelled).toEqual({ kind: 'cancelled' });
    const gone: Admission = await queue.admit(waiting('j2', 'nothing-serves-this').waiting);
    expect(gone.kind).toBe('not_ready');
    queue.close();
  });
});
