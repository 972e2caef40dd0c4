import { LocalAgentsError } from '../errors.js';
import type { SidecarResult } from '../registry/sidecar.js';
import { integerFlag, parseCommandArgs, type CommandContext, type CommandRun } from './context.js';
import { openRegistry } from './open-registry.js';
import { modelsJson, renderModels } from './render-models.js';
import { paintFor, terminalColumns } from './terminal.js';

/** `localagents models`, `models add-endpoint`, `models add-model`; the usage text lives in commands.ts. */
const COMMON = { config: { type: 'string' }, json: { type: 'boolean' } } as const;
const LIST = { ...COMMON, wide: { type: 'boolean' } } as const;

function report(context: CommandContext, result: SidecarResult, json: boolean): number {
  if (json) {
    context.stdout.write(`${JSON.stringify(result)}\n`);
  } else if (result.kind === 'written') {
    context.stdout.write(
      `${result.replaced ? 'replaced' : 'added'} ${result.section}.${result.name} in ${result.file}\n`,
    );
  } else {
    context.stderr.write(`${result.message}\n`);
  }
  return result.kind === 'written' ? 0 : 1;
}

/** `--env NAME=VALUE`, repeatable → the endpoint's `env` mapping (validated by the sidecar writer). */
function envAssignments(pairs: string[] | undefined): Record<string, string> | undefined {
  if (pairs === undefined) return undefined;
  const env: Record<string, string> = {};
  for (const pair of pairs) {
    const equals = pair.indexOf('=');
    if (equals <= 0) {
      throw new LocalAgentsError(
        'BAD_ARGUMENT',
        `localagents models add-endpoint: --env takes NAME=VALUE (got "${pair}")`,
        { hint: 'for example --env CUDA_VISIBLE_DEVICES=0' },
      );
    }
    env[pair.slice(0, equals)] = pair.slice(equals + 1);
  }
  return env;
}

async function addEndpoint(context: CommandContext, args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs(
    'models add-endpoint',
    args,
    {
      ...COMMON,
      'base-url': { type: 'string' },
      backend: { type: 'string' },
      host: { type: 'string' },
      notes: { type: 'string' },
      'api-key-env': { type: 'string' },
      env: { type: 'string', multiple: true },
    },
    true,
  );
  const [name] = positionals;
  if (name === undefined || values['base-url'] === undefined) {
    throw new LocalAgentsError(
      'BAD_ARGUMENT',
      'localagents models add-endpoint: NAME and --base-url are required',
      {
        hint: 'for example: localagents models add-endpoint gpu --base-url http://127.0.0.1:8080 --backend llama.cpp',
      },
    );
  }
  const result = await openRegistry(context, values.config).registerEndpoint({
    name,
    base_url: values['base-url'],
    backend: values.backend,
    host: values.host,
    notes: values.notes,
    api_key_env: values['api-key-env'],
    env: envAssignments(values.env),
  });
  return report(context, result, values.json === true);
}

async function addModel(context: CommandContext, args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs(
    'models add-model',
    args,
    {
      ...COMMON,
      notes: { type: 'string' },
      host: { type: 'string' },
      'served-name': { type: 'string' },
      endpoint: { type: 'string' },
      context: { type: 'string' },
      'bring-up': { type: 'string' },
    },
    true,
  );
  const [name] = positionals;
  if (name === undefined) {
    throw new LocalAgentsError('BAD_ARGUMENT', 'localagents models add-model: NAME is required', {
      hint: 'for example: localagents models add-model qwen3.8-27b --notes "default coder" --host workstation',
    });
  }
  const window =
    values.context === undefined
      ? undefined
      : integerFlag('models add-model', 'context', values.context, 65536);
  const result = await openRegistry(context, values.config).registerModel({
    name,
    notes: values.notes,
    host: values.host,
    served_name: values['served-name'],
    endpoint: values.endpoint,
    context: window,
    bring_up: values['bring-up'],
  });
  return report(context, result, values.json === true);
}

export const runModels: CommandRun = async (context) => {
  const [sub, ...rest] = context.args;
  if (sub === 'add-endpoint') return addEndpoint(context, rest);
  if (sub === 'add-model') return addModel(context, rest);
  const { values } = parseCommandArgs('models', context.args, LIST);
  const snapshot = await openRegistry(context, values.config).snapshot(context.signal);
  if (values.json === true)
    context.stdout.write(`${JSON.stringify(modelsJson(snapshot), null, 2)}\n`);
  else {
    const stream = snapshot.config.ok ? context.stdout : context.stderr;
    stream.write(
      `${renderModels(snapshot, {
        width: terminalColumns(stream, context.env),
        wide: values.wide,
        paths: { cwd: context.cwd, home: context.env.HOME },
        paint: paintFor(stream, context.env),
      })}\n`,
    );
  }
  return snapshot.config.ok ? 0 : 1;
};
