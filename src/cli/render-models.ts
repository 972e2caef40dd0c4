import { COMFORTABLE_CONTEXT_TOKENS } from '../registry/config-defaults.js';
import { formatConfigIssue } from '../registry/config-messages.js';
import type { ConfigIssue } from '../registry/config-types.js';
import type { RegistrySnapshot } from '../registry/registry.js';
import type { EndpointProbe } from '../registry/probe.js';
import { fitColumns, type Shrinkable } from './columns.js';
import { shortPath } from './display-paths.js';
import { createPaint, type ScreenView } from './terminal.js';

/** `localagents models` output: the --json object and the human table (pure; inline-snapshot tested). */

export interface ModelsJson {
  config: { files: string[]; warnings: ConfigIssue[]; errors: ConfigIssue[] };
  endpoints: Record<string, Record<string, unknown>>;
  models: Record<string, Record<string, unknown>>;
}

/**
 * Field by field, so nothing unlisted (the API key above all) can reach stdout. The keys are the
 * README's `models --json` shape; `host` is null when unset, like a menu entry's.
 */
function endpointJson(probe: EndpointProbe): Record<string, unknown> {
  return {
    base_url: probe.base_url,
    backend: probe.backend,
    host: probe.host ?? null,
    up: probe.up,
    status: probe.status,
    ...(probe.error !== undefined ? { error: probe.error } : {}),
    models: probe.models,
    context: probe.context,
    ...(probe.slots
      ? {
          slots: {
            total: probe.slots.total,
            busy: probe.slots.busy,
            free: probe.slots.free,
            source: probe.slots.source,
          },
        }
      : {}),
    ...(probe.vllm ? { vllm: probe.vllm } : {}),
    ...(probe.capacity ? { capacity: probe.capacity } : {}),
    ...(probe.installed
      ? {
          installed: probe.installed.map((model) => ({
            id: model.id,
            state: model.state,
            context: model.context ?? null,
            trained: model.trained ?? null,
            note: model.note,
          })),
        }
      : {}),
    metrics: probe.metrics,
    latency_ms: probe.latency_ms,
    ...(probe.warnings ? { warnings: probe.warnings } : {}),
  };
}

export function modelsJson(snapshot: RegistrySnapshot): ModelsJson {
  const { config } = snapshot;
  const files = config.ok ? config.config.files : config.files;
  return {
    config: { files, warnings: config.warnings, errors: config.ok ? [] : config.issues },
    endpoints: Object.fromEntries(
      snapshot.endpoints.map((probe) => [probe.name, endpointJson(probe)]),
    ),
    models: Object.fromEntries(
      snapshot.models.map(({ name, ...status }) => [
        name,
        { notes: status.notes ?? null, host: status.host ?? null, ...status },
      ]),
    ),
  };
}

function table(
  rows: string[][],
  view: ScreenView,
  shrink: readonly Shrinkable[],
  paint?: (cell: string, row: number, column: number) => string,
): string[] {
  return fitColumns(rows, {
    indent: '  ',
    width: view.wide ? undefined : view.width,
    shrink,
    ...(paint ? { paint } : {}),
  });
}

function load(probe: EndpointProbe): string {
  if (probe.slots)
    return probe.slots.source === 'props'
      ? `${probe.slots.total} slots, busy unknown`
      : `${probe.slots.busy} busy, ${probe.slots.free} free`;
  if (probe.vllm) {
    const kv =
      probe.vllm.kvCacheUsage === undefined
        ? ''
        : `, kv ${Math.round(probe.vllm.kvCacheUsage * 100)}%`;
    return `${probe.vllm.running} running, ${probe.vllm.waiting} waiting${kv}`;
  }
  if (probe.capacity)
    return `${probe.capacity.total} parallel${probe.capacity.source === 'backend' ? '' : ` (${probe.capacity.source === 'config' ? 'max_concurrent' : 'assumed'})`}`;
  return '-';
}

function endpointRows(probe: EndpointProbe): string[][] {
  const state = probe.up ? `up ${probe.latency_ms} ms` : `down: ${probe.status}`;
  const metrics = probe.metrics ? 'yes' : 'no';
  const rows: { id: string; window: string }[] = probe.models.map((id) => {
    const tokens = probe.context[id];
    return {
      id,
      window:
        tokens === undefined ? '-' : `${tokens}${tokens < COMFORTABLE_CONTEXT_TOKENS ? '*' : ''}`,
    };
  });
  // Installed but not loaded (Ollama, LM Studio): listed, marked, with the window it will load with if known.
  for (const model of probe.installed ?? [])
    rows.push({
      id: `${model.id} (${model.state === 'loading' ? 'loading' : 'not loaded'})`,
      window: model.context === undefined ? '?' : `${model.context} when loaded`,
    });
  if (rows.length === 0) rows.push({ id: '-', window: '-' });
  return rows.map(({ id, window }, index) =>
    index === 0
      ? [probe.name, state, probe.backend, id, window, load(probe), metrics]
      : ['', '', '', id, window, '', ''],
  );
}

/**
 * The human form. With a width the tables fit it: the load and state texts give way first, then the
 * served ids (cut in the middle); in the menu the notes, then the status sentence. `wide` cuts nothing.
 */
export function renderModels(snapshot: RegistrySnapshot, view: ScreenView = {}): string {
  const paint = view.paint ?? createPaint(false);
  const path = (file: string): string => (view.paths ? shortPath(file, view.paths) : file);
  const lines: string[] = [];
  const { config } = snapshot;
  if (!config.ok) {
    lines.push(
      'models.yaml is invalid:',
      ...config.issues.map((issue) => indent(formatConfigIssue(issue))),
    );
  } else {
    lines.push('Endpoints');
    const rows = [['NAME', 'STATE', 'BACKEND', 'SERVED', 'WINDOW', 'SLOTS', 'METRICS']];
    for (const probe of snapshot.endpoints) rows.push(...endpointRows(probe));
    lines.push(
      ...table(
        rows,
        view,
        [
          { column: 5, min: 8 },
          { column: 1, min: 8 },
          { column: 3, min: 12, cut: 'middle' },
          { column: 0, min: 8, cut: 'middle' },
        ],
        (cell, row, column) =>
          row > 0 && column === 1 && cell.length > 0
            ? cell.startsWith('up')
              ? paint.status('succeeded', cell)
              : paint.error(cell)
            : cell,
      ),
    );
    for (const probe of snapshot.endpoints.filter((item) => item.error))
      lines.push(`  ${probe.name}: ${probe.error ?? ''}`);
    const small = snapshot.endpoints.some((probe) =>
      Object.values(probe.context).some((tokens) => tokens < COMFORTABLE_CONTEXT_TOKENS),
    );
    if (small)
      lines.push(
        '  * under 128k tokens: Claude Code will compact early or hit "prompt is too long"',
      );
    lines.push('', 'Menu');
    if (snapshot.models.length === 0)
      lines.push('  (no models listed under models: in models.yaml)');
    const menu = snapshot.models.map((entry) => [
      entry.name,
      (entry.running
        ? `running on ${entry.endpoint ?? '?'} as ${entry.served_as ?? '?'}${entry.available ? '' : ', window too small'}`
        : entry.loaded === false
          ? `installed on ${entry.endpoint ?? '?'} as ${entry.served_as ?? '?'}, not loaded${entry.context === undefined ? ' (window unknown until loaded)' : ` (loads with ${entry.context})`}`
          : entry.candidates
            ? `ambiguous: ${entry.candidates.map((c) => `${c.served_model} on ${c.endpoint}`).join(', ')}`
            : `not running${entry.host ? ` (host ${entry.host})` : ''}`) +
        (entry.context === undefined
          ? ''
          : (entry.running || entry.loaded === false) && entry.context_source !== 'menu'
            ? ''
            : `, window ${entry.context} (set by context in models.yaml)`),
      entry.notes ?? '',
    ]);
    lines.push(
      ...table(menu, view, [
        { column: 2, min: 10 },
        { column: 1, min: 20 },
      ]),
    );
    lines.push('', `Config: ${config.config.files.map(path).join(', ')}`);
  }
  for (const warning of config.warnings)
    lines.push(indent(`${paint.warning('warning:')} ${formatConfigIssue(warning)}`));
  return lines.join('\n');
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
}
