import { LocalAgentsError } from '../errors.js';
import { startEmulator, type EmulatorOptions } from '../emulator/emulator.js';
import { FaultSchema, type Fault } from '../emulator/faults.js';
import { loadScript } from '../emulator/script.js';
import { integerFlag, parseCommandArgs, waitForAbort, type CommandRun } from './context.js';

const OPTIONS = {
  backend: { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  'n-ctx': { type: 'string' },
  'n-ctx-train': { type: 'string' },
  parallel: { type: 'string' },
  'kv-unified': { type: 'boolean' },
  metrics: { type: 'boolean' },
  'no-slots': { type: 'boolean' },
  'api-key': { type: 'string' },
  'strict-template': { type: 'boolean' },
  'no-strict-template': { type: 'boolean' },
  'served-name': { type: 'string', multiple: true },
  lora: { type: 'string', multiple: true },
  'enable-auto-tool-choice': { type: 'boolean' },
  'old-context-wording': { type: 'boolean' },
  'context-error-500': { type: 'boolean' },
  loaded: { type: 'string', multiple: true },
  'num-ctx-param': { type: 'string' },
  'no-context-shift': { type: 'boolean' },
  'ollama-version': { type: 'string' },
  'lmstudio-old-wording': { type: 'boolean' },
  'jit-load-ms': { type: 'string' },
  'jit-context': { type: 'string' },
  speculative: { type: 'string' },
  script: { type: 'string' },
  'loading-ms': { type: 'string' },
  'prefill-ms-per-token': { type: 'string' },
  'decode-tokens-per-s': { type: 'string' },
  'ttfb-ms': { type: 'string' },
  fault: { type: 'string', multiple: true },
} as const;

function numberFlag(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 0) {
    throw new LocalAgentsError(
      'BAD_ARGUMENT',
      `localagents emulate: --${name} must be a non-negative number (got "${value}")`,
    );
  }
  return parsed;
}

// Same shape as a POST /_emulator/faults entry, so reliability tests can start a faulty server from a shell.
function faultFlags(texts: readonly string[]): Fault[] {
  return texts.map((text) => {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const parsed = FaultSchema.safeParse(json);
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
    throw new LocalAgentsError(
      'BAD_ARGUMENT',
      `localagents emulate: --fault ${text} is not a fault${where}: ${issue?.message ?? 'expected JSON'}`,
      { hint: 'write JSON such as --fault \'{"kind":"status","status":503,"count":2}\'' },
    );
  });
}

/** `localagents emulate`: prints the base URL as its first stdout line, serves until SIGINT/SIGTERM. */
/** `--speculative K:RATE`: K draft tokens a step, RATE of them accepted (vLLM --speculative-config). */
function speculativeFlag(value: string): { numSpeculativeTokens: number; acceptanceRate: number } {
  const [k, rate] = value.split(':').map(Number);
  if (!Number.isInteger(k) || (k ?? 0) < 1 || rate === undefined || !(rate >= 0 && rate <= 1)) {
    throw new LocalAgentsError('BAD_ARGUMENT', `emulate: --speculative "${value}" is not K:RATE`, {
      hint: 'e.g. --speculative 4:0.7 (4 draft tokens a step, 70% accepted)',
    });
  }
  return { numSpeculativeTokens: k ?? 1, acceptanceRate: rate };
}

const BACKENDS = ['llama.cpp', 'vllm', 'ollama', 'lmstudio'] as const;
type EmulatedBackend = (typeof BACKENDS)[number];

function backendFlag(value: string | undefined): EmulatedBackend {
  const backend = value ?? 'llama.cpp';
  const known = BACKENDS.find((candidate) => candidate === backend);
  if (known) return known;
  throw new LocalAgentsError(
    'BAD_ARGUMENT',
    `localagents emulate: --backend must be llama.cpp, vllm, ollama or lmstudio (got "${backend}")`,
  );
}

export const runEmulate: CommandRun = async (context) => {
  const { values } = parseCommandArgs('emulate', context.args, OPTIONS);
  const backend = backendFlag(values.backend);
  const optional = (name: string, value: string | undefined): number | undefined =>
    value === undefined ? undefined : integerFlag('emulate', name, value, 0);
  const options: EmulatorOptions = {
    backend,
    host: values.host ?? '127.0.0.1',
    port: integerFlag('emulate', 'port', values.port, 8080),
    metrics: values.metrics === true,
    slots: values['no-slots'] !== true,
    // vLLM's own flag: without it (the default, as in vLLM) every request with tools gets a 400.
    toolChoice: values['enable-auto-tool-choice'] === true,
    vllmContextWording: values['old-context-wording'] === true ? 'too-large' : 'at-least',
    vllmContextStatus: values['context-error-500'] === true ? 500 : 400,
    ...(values.speculative === undefined
      ? {}
      : { speculative: speculativeFlag(values.speculative) }),
    latency: {
      prefillMsPerToken: numberFlag('prefill-ms-per-token', values['prefill-ms-per-token']) ?? 0,
      decodeTokensPerSecond: numberFlag('decode-tokens-per-s', values['decode-tokens-per-s']) ?? 0,
      ttfbMs: numberFlag('ttfb-ms', values['ttfb-ms']) ?? 0,
    },
  };
  const nCtx = optional('n-ctx', values['n-ctx']);
  if (nCtx !== undefined) options.nCtx = nCtx;
  const nCtxTrain = optional('n-ctx-train', values['n-ctx-train']);
  if (nCtxTrain !== undefined) options.nCtxTrain = nCtxTrain;
  const parallel = optional('parallel', values.parallel);
  if (parallel !== undefined) options.parallel = parallel;
  if (values['kv-unified']) options.kvUnified = true;
  if (values['api-key'] !== undefined) options.apiKey = values['api-key'];
  if (values['no-strict-template']) options.strictTemplate = false;
  else if (values['strict-template']) options.strictTemplate = true;
  if (values['served-name']) options.servedNames = values['served-name'];
  if (values.lora) {
    options.loras = values.lora.map((entry) => {
      const [name = entry, base] = entry.split('=');
      return base ? { name, base } : { name };
    });
  }
  if (values.script !== undefined) options.script = await loadScript(values.script);
  // `--loaded ''` alone: nothing loaded at start.
  if (values.loaded) options.loadedNames = values.loaded.filter((name) => name !== '');
  const numCtxParameter = optional('num-ctx-param', values['num-ctx-param']);
  if (numCtxParameter !== undefined) options.numCtxParameter = numCtxParameter;
  if (values['no-context-shift']) options.contextShift = false;
  if (values['ollama-version'] !== undefined) options.ollamaVersion = values['ollama-version'];
  if (values['lmstudio-old-wording']) options.lmstudioOldWording = true;
  const jitLoadMs = optional('jit-load-ms', values['jit-load-ms']);
  if (jitLoadMs !== undefined) options.jitLoadMs = jitLoadMs;
  const jitContext = optional('jit-context', values['jit-context']);
  if (jitContext !== undefined) options.jitContext = jitContext;
  const loadingMs = optional('loading-ms', values['loading-ms']);
  if (loadingMs !== undefined) options.loadingMs = loadingMs;
  const faults = faultFlags(values.fault ?? []);

  const emulator = await startEmulator(options);
  if (faults.length > 0) emulator.injectFaults(faults);
  context.stdout.write(`${emulator.url}\n`);
  await waitForAbort(context.signal);
  await emulator.close();
  return 0;
};
