import type { CommandRun } from './context.js';

/** One row per command. `load` is a dynamic import so a command pulls in only what it needs. */
export interface CommandSpec {
  name: string;
  summary: string;
  usage: string;
  load: () => Promise<CommandRun>;
}

export const COMMANDS: readonly CommandSpec[] = [
  {
    name: 'emulate',
    summary: 'run the llama.cpp / vLLM backend emulator (tests, demo, trying the setup without a GPU)',
    usage: `localagents emulate [options]

Starts an HTTP server that behaves like llama-server or vLLM, with a scripted model.
Prints its base URL (http://HOST:PORT) as the first line on stdout once it listens.

Options:
  --backend llama.cpp|vllm   personality (default llama.cpp)
  --host H                   listen address (default 127.0.0.1)
  --port N                   port, 0 picks a free one (default 8080)
  --n-ctx N                  total context like llama-server -c (default 32768; vLLM: max_model_len)
  --n-ctx-train N            the model's training context, caps the per-slot window (default 32768)
  --parallel N               slots like --parallel (default: 4, unified KV)
  --kv-unified               share the KV cells between slots
  --metrics                  enable /metrics (llama.cpp: 501 without it; vLLM always has it)
  --api-key K                require the key on guarded routes
  --strict-template          reject mid-conversation system messages (default on for llama.cpp)
  --no-strict-template       accept them
  --served-name NAME         model id (repeatable for vLLM; llama.cpp: --alias)
  --no-tool-choice           vLLM: answer 400 to tool requests like a server without --enable-auto-tool-choice
  --script FILE              JSON or YAML list of turns the scripted model plays
  --loading-ms N             answer 503 "Loading model" (vLLM: refuse connections) for N ms first
  --prefill-ms-per-token X   simulated prompt processing time
  --decode-tokens-per-s X    simulated generation speed (0 = instant)
  --ttfb-ms N                extra delay before the first byte
  -h, --help                 this help`,
    load: async () => (await import('./emulate.js')).runEmulate,
  },
];

export function findCommand(name: string): CommandSpec | undefined {
  return COMMANDS.find((command) => command.name === name);
}

export function renderTopLevelHelp(): string {
  const width = Math.max(...COMMANDS.map((command) => command.name.length));
  const rows = COMMANDS.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`);
  return [
    'localagents: hand routine Claude Code work to a model on your own hardware',
    '',
    'Usage: localagents <command> [options]',
    '',
    'Commands:',
    ...rows,
    '',
    'Run `localagents <command> --help` for a command’s options.',
  ].join('\n');
}
