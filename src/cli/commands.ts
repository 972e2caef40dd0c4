import { alignColumns } from './columns.js';
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
    summary:
      'run the llama.cpp / vLLM / Ollama / LM Studio backend emulator (tests, demo, trying the setup without a GPU)',
    usage: `localagents emulate [options]

Starts an HTTP server that behaves like llama-server, vLLM, Ollama or LM Studio, with a scripted model.
Prints its base URL (http://HOST:PORT) as the first line on stdout once it listens.

Options:
  --backend B                llama.cpp (default), vllm, ollama or lmstudio
  --host H                   listen address (default 127.0.0.1)
  --port N                   port, 0 picks a free one (default 8080)
  --n-ctx N                  total context like llama-server -c (default 32768; vLLM: max_model_len;
                             Ollama/LM Studio: the window of a loaded model)
  --n-ctx-train N            the model's training context, caps the per-slot window (default 32768;
                             Ollama/LM Studio: 262144)
  --parallel N               slots like --parallel (default: 4, unified KV; Ollama 1; LM Studio 4)
  --kv-unified               share the KV cells between slots
  --metrics                  enable /metrics (llama.cpp: 501 without it; vLLM always has it)
  --no-slots                 llama.cpp: disable /slots (501) like llama-server --no-slots
  --api-key K                require the key on guarded routes (LM Studio: every route; Ollama: ignored)
  --strict-template          reject mid-conversation system messages (default on for llama.cpp)
  --no-strict-template       accept them
  --served-name NAME         model id (repeatable for vLLM; llama.cpp: --alias; Ollama: pulled names;
                             LM Studio: downloaded keys)
  --loaded NAME              Ollama/LM Studio: loaded at start (repeatable; default all; '' for none)
  --num-ctx-param N          Ollama: Modelfile PARAMETER num_ctx (shown by /api/show)
  --no-context-shift         Ollama: deepseek2-like, an oversize prompt gets a 400 instead of truncation
  --ollama-version V         Ollama: /api/version and the truncation rule (default 0.32.15)
  --jit-load-ms N            Ollama/LM Studio: a request for a model not loaded loads it in N ms
  --jit-context N            Ollama/LM Studio: the window of a JIT-loaded model (LM Studio default 4096)
  --lmstudio-old-wording     LM Studio: the 0.3.x overflow wording
  --enable-auto-tool-choice  vLLM: accept tool requests (without it, like vLLM, they get a 400)
  --lora NAME[=BASE]         vLLM: list a LoRA card (repeatable)
  --old-context-wording      vLLM: the older "'max_tokens' … is too large" 400 wording
  --context-error-500        vLLM: answer that overflow 500 internal_error, as newer vLLM's /v1/messages does
  --speculative K:RATE       vLLM: speculative decoding (K draft tokens a step, RATE accepted): spec_decode counters
  --script FILE              JSON or YAML list of turns the scripted model plays
  --loading-ms N             answer 503 "Loading model" (vLLM: refuse connections) for N ms first
  --prefill-ms-per-token X   simulated prompt processing time
  --decode-tokens-per-s X    simulated generation speed (0 = instant)
  --ttfb-ms N                extra delay before the first byte
  --fault JSON               queue a fault for the next /v1/messages requests, as in
                             POST /_emulator/faults (repeatable), e.g. '{"kind":"status","status":503}'
  -h, --help                 this help`,
    load: async () => (await import('./emulate.js')).runEmulate,
  },
  {
    name: 'models',
    summary: 'endpoints up/down, served ids, windows, slots, and which menu entries run where',
    usage: `localagents models [--json] [--wide] [--config F]
localagents models add-endpoint NAME --base-url URL [--backend llama.cpp|vllm|other] [--host H] [--notes T] [--api-key-env VAR] [--env NAME=VALUE …]
localagents models add-model NAME [--notes T] [--host H] [--served-name ID|GLOB] [--endpoint E] [--context N] [--bring-up T]

Probes every endpoint in models.yaml (in parallel, each within probe_timeout_s) and prints what is up,
what it serves, each window, slot use, and the menu with what is running where.
add-endpoint and add-model write models.local.yaml beside the user file, never models.yaml.

Options:
  --json          print one JSON object on stdout (shape in docs/registry.md)
  --wide          every cell whole (on a terminal the tables are cut to its width)
  --config F      the user models.yaml (default: $LOCALAGENTS_CONFIG, else $XDG_CONFIG_HOME/localagents/models.yaml)
  -h, --help      this help`,
    load: async () => (await import('./models.js')).runModels,
  },
  {
    name: 'proxy',
    summary: 'the shim alone, for an interactive claude on a local model; prints the env to export',
    usage: `localagents proxy (--endpoint NAME | --base-url URL) [options]

Runs the shim (system-message folding, error translation, keepalive, request log) in front of one
backend. Once listening it prints the environment for claude on stdout, one NAME=value per line,
starting with ANTHROPIC_BASE_URL=http://127.0.0.1:PORT/j/TOKEN; it serves until Ctrl-C.
With --base-url the backend is probed for its kind, served id and context window.

Options:
  --endpoint NAME        an endpoint from models.yaml (resolved and probed through the registry)
  --base-url URL         a backend URL such as http://127.0.0.1:8080 (without /v1)
  --model ID             the served id to use (default: the endpoint's first / the matching one)
  --backend KIND         with --base-url: llama.cpp, vllm or other (default other = detect)
  --api-key-env VAR      with --base-url: the variable holding the backend's API key
  --host H               listen address (default 127.0.0.1)
  --port N               port, 0 picks a free one (default 0)
  --log-dir D            where requests.jsonl goes (default: <state dir>/proxy)
  --dump-requests        also write requests_full.jsonl (bodies as forwarded, keys redacted)
  --keepalive-s N        ping an open stream after N s of backend silence (default 15; 0: never)
  --probe-timeout-s N    how long the --base-url probe may take (default 5)
  --config F             the user models.yaml, for --endpoint
  -h, --help             this help`,
    load: async () => (await import('./proxy.js')).runProxy,
  },
  {
    name: 'serve',
    summary: 'the MCP server for Claude Code (default command): stdio, streamable HTTP or SSE',
    usage: `localagents [serve] [--config F] [--transport stdio|streamable-http|sse] [--port N] [--http PORT] [--claude-path P] [--dashboard]

The MCP server that Claude Code talks to. stdio by default, which is what
  claude mcp add --scope user local -- localagents --config ~/.config/localagents/models.yaml
runs. Tools: list_models, request_model, register_endpoint, register_model, run_agent, wait_job,
job_status, job_log, list_jobs, cancel_job, job_diff, local_complete (see docs/jobs.md).
stdout carries JSON-RPC only; diagnostics go to stderr (level from LOCALAGENTS_LOG).
At start, jobs of a server that died are marked interrupted and their claude processes stopped.

Options:
  --config F        the user models.yaml (default: $LOCALAGENTS_CONFIG, else $XDG_CONFIG_HOME/localagents/models.yaml)
  --transport T     stdio (default), streamable-http (http://127.0.0.1:PORT/mcp) or sse (the MCP SDK's
                    legacy SSE transport: GET http://127.0.0.1:PORT/sse, POST /messages/), as the Python original
  --port N          the port of an HTTP transport (default 8000, the Python original's; 0 picks a free one)
  --http PORT       short for --transport streamable-http --port PORT
  --host H          listen on H instead of 127.0.0.1 (a warning says what that opens)
  --token-file F    the bearer token HTTP clients must send (default <state dir>/serve-token, made
                    0600 on first start and printed with the claude mcp add line that uses it)
  --claude-path P   run this claude binary instead of the one bundled with the Agent SDK
                    (also $LOCALAGENTS_CLAUDE_PATH)
  --dashboard       also serve the page of \`localagents dashboard\` (its URL on stderr and in
                    <state dir>/dashboard.url)
  --dashboard-port N
                    the dashboard's port (default 0: a free one); implies --dashboard
  -h, --help        this help`,
    load: async () => (await import('./serve.js')).runServe,
  },
  {
    name: 'dashboard',
    summary: 'a live page of the jobs (status, requests, transcript) and endpoints, on 127.0.0.1',
    usage: `localagents dashboard [--port N] [--config F]

Serves a page on 127.0.0.1 only, under a random token in its URL, printed first on stdout (and kept in
<state dir>/dashboard.url, 0600). It shows every job in the state directory, whichever process runs it:
status, model, endpoint, turns, elapsed, queue place, last activity; the selected job's transcript as it
grows, its diffstat and verification, and a timeline of its requests (time to first byte, duration,
prompt, cached and generated tokens, rewrites, errors); and each endpoint: up or down, served ids,
windows, slots busy and free over time, vLLM's KV cache use. Updates arrive as server-sent events.
Also started beside the MCP server by \`localagents serve --dashboard\`.

Options:
  --port N        port, 0 picks a free one (default 0)
  --config F      the user models.yaml (default: $LOCALAGENTS_CONFIG, else $XDG_CONFIG_HOME/localagents/models.yaml)
  -h, --help      this help`,
    load: async () => (await import('./dashboard.js')).runDashboard,
  },
  {
    name: 'run',
    summary: 'run one job from the terminal with live progress; exit 0 only if it succeeded',
    usage: `localagents run <task> [options]

Runs one delegated Claude Code session on a local model and waits for it. Progress goes to
stderr (a status line on a terminal); the summary, or with --json the final job.json, to stdout.

Options:
  --model M                 served id or menu name (default: models.yaml defaults.model, else the first live endpoint)
  --endpoint E              endpoint name, when several serve the model
  --cwd D                   working directory (default: the current one)
  --isolation none|worktree worktree: a new branch local-agent/<job> in its own git worktree (default none)
  --base-ref R              commit the worktree starts from (default HEAD)
  --timeout S               stop the job after S seconds (default defaults.timeout_s, 1800)
  --max-turns N             most model turns (default defaults.max_turns, 60)
  --permission-mode M       default|acceptEdits|bypassPermissions|plan|dontAsk (default acceptEdits)
  --append-system-prompt T  extra instructions for the delegate
  --agent NAME              run your subagent .claude/agents/NAME.md: its prompt, its tools, its settings
  --verify CMD              shell command run in the job directory afterwards; a failure fails the job
  --verify-retries N        rounds the delegate gets to fix a failed verification (default 0)
  --detach                  start the job in the background, print its id and return
  --json                    print the final job.json as the only thing on stdout
  --config F                the user models.yaml
  --claude-path P           run this claude binary instead of the bundled one
  -h, --help                this help`,
    load: async () => (await import('./run.js')).runRun,
  },
  {
    name: 'jobs',
    summary: 'list job records, newest first',
    usage: `localagents jobs [--json] [--all] [--wide] [--config F] [--claude-path P]

Lists the jobs in the state directory ($LOCALAGENTS_STATE_DIR, else $XDG_STATE_HOME/localagents),
newest first: the last 30, or all with --all. On a terminal the table fits its width (the task is
cut first, then the model name); --wide shows every cell whole. --json prints the job.json records
as a JSON array.`,
    load: async () => (await import('./jobs.js')).runJobs,
  },
  {
    name: 'show',
    summary: 'one job record: status, result, files touched, worktree, backend figures',
    usage: `localagents show <job> [--json] [--config F] [--claude-path P]

Prints one job's record for people, or with --json its job.json.`,
    load: async () => (await import('./jobs.js')).runShow,
  },
  {
    name: 'log',
    summary: 'a job transcript; -f follows it until the job ends',
    usage: `localagents log <job> [-f] [-n N] [--config F] [--claude-path P]

Prints the job's transcript.txt.

Options:
  -f, --follow   keep printing new lines until the job ends
  -n, --lines N  only the last N lines (then follow with -f)`,
    load: async () => (await import('./log.js')).runLog,
  },
  {
    name: 'diff',
    summary: 'the worktree diff of a job against its base commit (new files included)',
    usage: `localagents diff <job> [--config F] [--claude-path P]

Prints the diff of a worktree job's working tree against the commit it started from,
untracked files included. Jobs without a kept worktree have no diff.`,
    load: async () => (await import('./jobs.js')).runDiff,
  },
  {
    name: 'cancel',
    summary: 'stop a running job (also one run by a server or another terminal)',
    usage: `localagents cancel <job> [--json] [--config F] [--claude-path P]

Stops the job's claude session and waits until its record says cancelled. Works across
processes: the server that runs the job records the cancel.`,
    load: async () => (await import('./jobs.js')).runCancel,
  },
  {
    name: 'doctor',
    summary:
      'check that a server works with Claude Code: window, fold, tools, stream, cache, overflow, speed',
    usage: `localagents doctor [--endpoint NAME | --base-url URL] [--model M] [--json] [--config F]

Replays Claude Code's own first request (its system prompt, tools and messages) against the server, through
the shim as a job would and, for the system-message check, directly too, and reports each check as PASS, WARN,
FAIL or SKIP with the fix: the window and how many turns fit, /metrics and /slots, a system message inside
messages, a tool call, the stream's event order, count_tokens, the prompt cache, the overflow answer Claude
Code compacts on, and the prompt speed. Exit 0 when nothing fails.

Options:
  --endpoint NAME      a models.yaml endpoint (default: the first)
  --base-url URL       a server not in models.yaml
  --backend K          with --base-url: llama.cpp, vllm or other (default other = detect)
  --api-key-env VAR    with --base-url: the variable holding the server's API key
  --model M            the served id to check (default: the first the server serves)
  --json               one object: {endpoint, base_url, backend, served_model, ok, checks: [{id, result, detail, fix?}]}`,
    load: async () => (await import('./doctor.js')).runDoctor,
  },
  {
    name: 'agents',
    summary: 'your Claude Code subagents (.claude/agents/) and the local model each would run on',
    usage: `localagents agents [--cwd D] [--json] [--config F]

Lists the subagent definitions a job in D (default: here) can run as, with run_agent agent: NAME or
localagents run --agent NAME: the project's .claude/agents/ (D and its parents), then ~/.claude/agents/.
MODEL is what the job would run on: agents.NAME.model in models.yaml, else the file's localagents: block,
else its model field when it names a menu entry, else the default.`,
    load: async () => (await import('./jobs.js')).runAgents,
  },
  {
    name: 'merge',
    summary: "take a finished worktree job's work into the branch it started from",
    usage: `localagents merge <job> [--strategy merge|squash|cherry-pick] [--message M] [--json]

Commits the job's uncommitted work on its branch (your git identity, trailers naming the job and model),
merges it into the branch the job started from (merge: a merge commit, the default; squash: one commit;
cherry-pick: its commits replayed), then removes the worktree and the branch. Refused with nothing
changed when that branch is not checked out, when the work conflicts with it, or when your uncommitted
changes touch the same files.`,
    load: async () => (await import('./jobs.js')).runMerge,
  },
  {
    name: 'discard',
    summary: "throw away a finished worktree job's work (its worktree and branch)",
    usage: `localagents discard <job> [--json]

Removes the job's worktree and branch; its record stays.`,
    load: async () => (await import('./jobs.js')).runDiscard,
  },
  {
    name: 'demo',
    summary:
      'the whole pipeline on the emulator: real claude, a temp git repo, a worktree job, its record',
    usage: `localagents demo [--backend llama.cpp|vllm|ollama|lmstudio] [--keep]

Starts the backend emulator (a scripted model), makes a temporary git repository, runs a worktree
job through the real claude binary with live progress, and prints the job record, a transcript
excerpt, the request-log summary and the diffstat. Needs no GPU and no network.

Options:
  --backend K  the server the emulator plays: llama.cpp (default), vllm, ollama or lmstudio
  --keep       keep the temporary directory (repository, worktree, state) and print its path
  -h, --help   this help`,
    load: async () => (await import('./demo.js')).runDemo,
  },
  {
    name: 'completion',
    summary: 'print a shell completion script (commands, options, job ids) for bash, zsh or fish',
    usage: `localagents completion bash|zsh|fish

Prints a completion script on stdout: the commands, each one's options, and the job ids in the
state directory for show, log, diff, cancel, merge and discard.

  bash  eval "$(localagents completion bash)" in ~/.bashrc
  zsh   eval "$(localagents completion zsh)" in ~/.zshrc, after compinit
  fish  localagents completion fish > ~/.config/fish/completions/localagents.fish`,
    load: async () => (await import('./completion.js')).runCompletion,
  },
];

export function findCommand(name: string): CommandSpec | undefined {
  return COMMANDS.find((command) => command.name === name);
}

export function renderTopLevelHelp(): string {
  const rows = alignColumns(
    COMMANDS.map((command) => [command.name, command.summary]),
    '  ',
  );
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
