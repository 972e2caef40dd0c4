import { LocalAgentsError } from '../errors.js';
import { backendKindOf } from '../kinds.js';
import { probeEndpoint, type EndpointProbe } from '../registry/probe.js';
import { redactUrl } from '../redact.js';
import { createShim } from '../shim/server.js';
import { fitColumns } from './columns.js';
import { parseCommandArgs, type CommandContext, type CommandRun } from './context.js';
import { openRegistry } from './open-registry.js';
import { probeChecks, requestChecks, type Check } from './doctor-checks.js';
import { paintFor } from './terminal.js';

const OPTIONS = {
  endpoint: { type: 'string' },
  'base-url': { type: 'string' },
  backend: { type: 'string' },
  model: { type: 'string' },
  'api-key-env': { type: 'string' },
  config: { type: 'string' },
  json: { type: 'boolean' },
} as const;

interface Target {
  probe: EndpointProbe;
  baseUrl: string;
  apiKey: string | undefined;
}

/** The endpoint to check: a models.yaml one by name (the first when none is named), or a bare URL. */
async function target(
  context: CommandContext,
  values: {
    endpoint?: string;
    'base-url'?: string;
    backend?: string;
    'api-key-env'?: string;
    config?: string;
  },
): Promise<Target> {
  const url = values['base-url'];
  if (url !== undefined) {
    const keyEnv = values['api-key-env'];
    const probe = await probeEndpoint(
      {
        name: 'doctor',
        base_url: url.replace(/\/+$/, '').replace(/\/v1$/, ''),
        backend:
          values.backend === undefined ? 'other' : (backendKindOf(values.backend) ?? 'other'),
        env: {},
        ...(keyEnv ? { api_key_env: keyEnv } : {}),
      },
      { timeoutMs: 5000, env: context.env, signal: context.signal },
    );
    return { probe, baseUrl: url.replace(/\/+$/, '').replace(/\/v1$/, ''), apiKey: probe.apiKey };
  }
  const registry = openRegistry(context, values.config);
  const config = await registry.config();
  if (!config.ok)
    throw new LocalAgentsError('CONFIG_INVALID', 'localagents doctor: models.yaml is invalid', {
      hint: 'run localagents models to see where, or check a server with --base-url',
    });
  const name = values.endpoint ?? config.config.endpoints[0]?.name;
  const endpoint = config.config.endpoints.find((candidate) => candidate.name === name);
  if (!endpoint || name === undefined)
    throw new LocalAgentsError(
      'BAD_ARGUMENT',
      `localagents doctor: no endpoint named "${name ?? ''}"`,
      {
        hint: `use one of: ${config.config.endpoints.map((candidate) => candidate.name).join(', ')}`,
      },
    );
  const probe = await registry.probeEndpoint(name, context.signal);
  if (!probe)
    throw new LocalAgentsError('BAD_ARGUMENT', `localagents doctor: no endpoint "${name}"`);
  return { probe, baseUrl: endpoint.base_url, apiKey: probe.apiKey };
}

const LABEL: Record<Check['result'], string> = {
  pass: 'PASS',
  warn: 'WARN',
  fail: 'FAIL',
  skip: 'SKIP',
};

/**
 * `localagents doctor [--endpoint NAME | --base-url URL] [--json]`: will this server work with Claude Code? Exit 0
 * when no check fails (warnings allowed), 1 otherwise.
 */
export const runDoctor: CommandRun = async (context) => {
  const { values } = parseCommandArgs('doctor', context.args, OPTIONS);
  if (values.endpoint !== undefined && values['base-url'] !== undefined)
    throw new LocalAgentsError(
      'BAD_ARGUMENT',
      'localagents doctor: give --endpoint or --base-url, not both',
    );
  const { probe, baseUrl, apiKey } = await target(context, values);
  const checks: Check[] = [];
  const servedId = values.model ?? probe.models[0];
  if (!probe.up || servedId === undefined) {
    checks.push({
      id: 'served',
      result: 'fail',
      detail: probe.up ? 'the server serves no model (none loaded)' : (probe.error ?? probe.status),
      fix: probe.up ? 'load a model on it' : 'start the server, or check its URL (without /v1)',
    });
  } else {
    const doctorTarget = { probe, baseUrl, servedId, apiKey };
    checks.push(...probeChecks(doctorTarget));
    const shim = await createShim();
    try {
      checks.push(...(await requestChecks(doctorTarget, shim)));
    } finally {
      await shim.close();
    }
  }
  const failed = checks.some((check) => check.result === 'fail');
  if (values.json) {
    context.stdout.write(
      `${JSON.stringify(
        {
          endpoint: probe.name,
          base_url: redactUrl(baseUrl),
          backend: probe.backend,
          served_model: servedId ?? null,
          ok: !failed,
          checks,
        },
        null,
        2,
      )}\n`,
    );
  } else {
    context.stdout.write(
      `localagents doctor: ${probe.name} at ${redactUrl(baseUrl)} (${probe.backend}${servedId ? `, ${servedId}` : ''})\n`,
    );
    const rows = checks.flatMap((check) => [
      [LABEL[check.result], check.id, check.detail],
      ...(check.fix ? [['', '', `fix: ${check.fix}`]] : []),
    ]);
    // The result word in its colour on a terminal: PASS green, WARN yellow, FAIL red.
    const paint = paintFor(context.stdout, context.env);
    const color: Partial<Record<string, string>> = {
      PASS: 'succeeded',
      WARN: 'timeout',
      FAIL: 'failed',
    };
    const painted = fitColumns(rows, {
      indent: '  ',
      paint: (cell, _row, column) => {
        const status = column === 0 ? color[cell] : undefined;
        return status ? paint.status(status, cell) : cell;
      },
    });
    context.stdout.write(`${painted.join('\n')}\n`);
    context.stdout.write(failed ? `${paint.error('some checks failed')}\n` : 'no check failed\n');
  }
  return failed ? 1 : 0;
};
