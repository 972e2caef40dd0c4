import { describe, expect, it } from 'vitest';
import { probeEndpoint } from '../../src/registry/probe.js';
import { blackHole, emulator, refusedPort, registryFor } from './registry-support.js';

/** A deadline that a probe honouring `timeoutMs` meets even on a loaded machine, and a hung one never does. */
const generousBound = (timeoutMs: number): number => timeoutMs * 5 + 3000;

describe('probing dead endpoints', () => {
  it('reports a refused port as refused with a plain sentence', async () => {
    const url = await refusedPort();
    const probe = await probeEndpoint(
      { name: 'cpu', base_url: url, backend: 'llama.cpp', env: {} },
      { timeoutMs: 2000, env: {} },
    );
    expect(probe).toMatchObject({
      up: false,
      status: 'refused',
      models: [],
      context: {},
      metrics: false,
    });
    expect(probe.error).toBe(
      `connection refused at ${new URL(url).host}: the host is up but nothing listens on that port (not started yet, or the wrong port)`,
    );
  });

  it('gives up on a black-holed endpoint at probe_timeout_s and calls it a timeout', async () => {
    const url = await blackHole();
    const started = performance.now();
    const probe = await probeEndpoint(
      { name: 'hole', base_url: url, backend: 'other', env: {} },
      { timeoutMs: 400, env: {} },
    );
    const elapsed = performance.now() - started;
    expect(probe).toMatchObject({ up: false, status: 'timeout' });
    expect(probe.error).toBe(
      `no answer from ${new URL(url).host} within 0.4 s (probe_timeout_s): the host may be down or firewalled, or the server is stuck`,
    );
    expect(elapsed).toBeGreaterThanOrEqual(390);
    // Gave up because of probe_timeout_s, not the OS's connect timeout (minutes); the tight figure is a
    // benchmark's (bench/models-probe.bench.ts), a test only needs the bound with room for a loaded machine.
    expect(elapsed).toBeLessThan(generousBound(400));
  });

  it('answers a snapshot with live, refused and black-holed endpoints within probe_timeout_s', async () => {
    const live = await emulator({ nCtx: 16384, parallel: 2 });
    const registry = await registryFor({
      defaults: { probe_timeout_s: 0.5 },
      endpoints: {
        hole: { base_url: await blackHole() },
        refused: { base_url: await refusedPort(), backend: 'llama.cpp' },
        live: { base_url: live.url, backend: 'llama.cpp' },
      },
    });
    const started = performance.now();
    const snapshot = await registry.snapshot();
    const elapsed = performance.now() - started;
    expect(snapshot.endpoints.map((probe) => [probe.name, probe.status, probe.up])).toEqual([
      ['hole', 'timeout', false],
      ['refused', 'refused', false],
      ['live', 'ok', true],
    ]);
    expect(elapsed).toBeLessThan(generousBound(500));
  });
});
