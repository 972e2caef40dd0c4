import { readFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { routeConfigFor } from '../jobs/ready-endpoint.js';
import { httpExchange, type HttpAnswer } from '../registry/probe-http.js';
import type { EndpointProbe } from '../registry/probe.js';
import {
  CLAUDE_CODE_FIXED_PROMPT_TOKENS,
  COMFORTABLE_CONTEXT_TOKENS,
  MIN_JOB_CONTEXT_TOKENS,
} from '../registry/config-defaults.js';
import { raiseWindowHint } from '../registry/resolve.js';
import type { Shim } from '../shim/server.js';

/**
 * `localagents doctor`: will this server work with Claude Code? Each check replays what Claude Code really sends
 * (its captured first request: system, tools and messages, assets/claude-code-first-turn.json) against the
 * server, through a shim route as a job would, and says pass, warn, fail or skip, with the fix in one sentence.
 */
export type CheckResult = 'pass' | 'warn' | 'fail' | 'skip';

export interface Check {
  id: string;
  result: CheckResult;
  detail: string;
  fix?: string;
}

interface FirstTurn {
  system: unknown;
  tools: { name: string }[];
  messages: { role: string; content: unknown }[];
}

/** The window to suggest for comfort: 128k, as servers count it. */
const COMFORTABLE_CONTEXT_TOKENS_POWER_OF_TWO = 131_072;

/** A typical turn's growth (a tool call and its result), for "how many turns fit". */
const TOKENS_PER_TURN = 2000;

async function firstTurn(): Promise<FirstTurn> {
  const text = await readFile(
    new URL('../../assets/claude-code-first-turn.json', import.meta.url),
    'utf8',
  );
  return JSON.parse(text) as FirstTurn;
}

export interface DoctorTarget {
  probe: EndpointProbe;
  baseUrl: string;
  servedId: string;
  apiKey: string | undefined;
}

interface Sent {
  answer: HttpAnswer;
  ms: number;
  json: Record<string, unknown> | undefined;
}

async function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Sent> {
  const started = performance.now();
  const answer = await httpExchange({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(120_000),
    maxBodyBytes: 16 * 1024 * 1024,
  });
  let json: Record<string, unknown> | undefined;
  if (answer.ok) {
    try {
      const parsed: unknown = JSON.parse(answer.body);
      if (typeof parsed === 'object' && parsed !== null) json = parsed as Record<string, unknown>;
    } catch {
      json = undefined;
    }
  }
  return { answer, ms: performance.now() - started, json };
}

function errorText(sent: Sent): string {
  if (!sent.answer.ok) return `no answer (${sent.answer.failure})`;
  const error = sent.json?.error;
  const message =
    typeof error === 'object' && error !== null && 'message' in error
      ? String(error.message)
      : sent.answer.body.slice(0, 200);
  return `HTTP ${sent.answer.status}: ${message.split('\n').at(-1) ?? message}`;
}

const okStatus = (sent: Sent): boolean => sent.answer.ok && sent.answer.status === 200;

/** The checks a probe alone answers: served, window, figures. */
export function probeChecks(target: DoctorTarget): Check[] {
  const { probe, servedId } = target;
  const checks: Check[] = [];
  checks.push({
    id: 'served',
    result: 'pass',
    detail: `${probe.backend} serves ${probe.models.join(', ')}; checking ${servedId}`,
  });
  const window = probe.context[servedId];
  if (window === undefined) {
    checks.push({
      id: 'window',
      result: 'warn',
      detail: `the server does not say ${servedId}'s per-request window`,
      fix: 'set context: N for this model in models.yaml, so Claude Code knows when to compact',
    });
  } else {
    const turns = Math.max(
      0,
      Math.floor((window - CLAUDE_CODE_FIXED_PROMPT_TOKENS) / TOKENS_PER_TURN),
    );
    const about = `${window} tokens per request: Claude Code's fixed prompt (about ${CLAUDE_CODE_FIXED_PROMPT_TOKENS}) leaves room for about ${turns} turns before it compacts`;
    checks.push(
      window < MIN_JOB_CONTEXT_TOKENS
        ? {
            id: 'window',
            result: 'fail',
            detail: `${about}; a job needs at least ${MIN_JOB_CONTEXT_TOKENS}`,
            fix: raiseWindowHint(probe.backend, servedId, probe.slots?.total ?? 1),
          }
        : window < COMFORTABLE_CONTEXT_TOKENS
          ? {
              id: 'window',
              result: 'warn',
              detail: `${about} (128k is comfortable)`,
              fix: raiseWindowHint(
                probe.backend,
                servedId,
                probe.slots?.total ?? 1,
                COMFORTABLE_CONTEXT_TOKENS_POWER_OF_TWO,
              ),
            }
          : { id: 'window', result: 'pass', detail: about },
    );
  }
  if (probe.backend === 'ollama' || probe.backend === 'lmstudio') {
    checks.push({
      id: 'figures',
      result: 'skip',
      detail: `${probe.backend === 'ollama' ? 'Ollama' : 'LM Studio'} has no /metrics or /slots: no speeds or busy slots per job`,
    });
  } else if (probe.backend === 'llama.cpp') {
    const slots = probe.slots?.source === 'slots';
    checks.push(
      probe.metrics && slots
        ? { id: 'figures', result: 'pass', detail: '/metrics and /slots answer' }
        : {
            id: 'figures',
            result: 'warn',
            detail: `${probe.metrics ? '' : '/metrics is off; '}${slots ? '' : '/slots is off; '}jobs get no speeds, and busy slots are guessed`,
            fix: 'start llama-server with --metrics (and without --no-slots)',
          },
    );
  } else {
    checks.push(
      probe.metrics
        ? { id: 'figures', result: 'pass', detail: '/metrics answers' }
        : {
            id: 'figures',
            result: 'warn',
            detail: '/metrics does not answer: no speeds, and the queue cannot see the load',
          },
    );
  }
  return checks;
}

/** The checks that send Claude Code's own requests, through a shim route and (for the fold) directly. */
export async function requestChecks(target: DoctorTarget, shim: Shim): Promise<Check[]> {
  const turn = await firstTurn();
  const { probe, servedId, baseUrl } = target;
  const window = probe.context[servedId];
  const route = shim.addRoute(
    routeConfigFor(
      {
        endpoint: { name: probe.name, base_url: baseUrl, backend: probe.backend, env: {} },
        servedId,
        servedIds: probe.models,
        contextTokens: window,
        contextSource: window === undefined ? 'unknown' : 'probe',
        apiKey: target.apiKey,
      },
      { keepaliveMs: 0 },
    ),
  );
  const key: Record<string, string> = target.apiKey
    ? { authorization: `Bearer ${target.apiKey}` }
    : {};
  // A prefix of this run's own, so the first turn is measured uncached and the second finds it cached.
  const system = [
    { type: 'text', text: `localagents doctor ${Date.now().toString(36)}` },
    ...(Array.isArray(turn.system) ? (turn.system as unknown[]) : []),
  ];
  const request = (extra: Record<string, unknown>) => ({
    model: servedId,
    max_tokens: 256,
    system,
    messages: turn.messages,
    ...extra,
  });
  const checks: Check[] = [];
  try {
    // The first request of the run, its prefix not cached yet: the speed line is measured on it.
    const streamed = await streamOnce(`${route.baseUrl}/v1/messages`, request({ stream: true }));

    // 1. Claude Code's first turn as it sends it: a system message inside messages.
    const direct = await post(`${baseUrl}/v1/messages`, request({}), key);
    const folded = await post(`${route.baseUrl}/v1/messages`, request({}));
    checks.push(
      !okStatus(folded)
        ? {
            id: 'system-fold',
            result: 'fail',
            detail: `Claude Code's first turn fails even folded: ${errorText(folded)}`,
          }
        : okStatus(direct)
          ? {
              id: 'system-fold',
              result: 'pass',
              detail:
                'the server takes a system message inside messages as sent; folded in place, the prompt prefix stays stable',
            }
          : {
              id: 'system-fold',
              result: 'pass',
              detail: `sent as Claude Code sends it, the first turn fails (${errorText(direct)}); through the shim, which folds it into the user turn, it works: the shim is needed`,
            },
    );

    // 2. A tool definition and the model's call of it (Claude Code's own Write tool).
    const write = turn.tools.find((tool) => tool.name === 'Write');
    const tooled = await post(
      `${route.baseUrl}/v1/messages`,
      request({
        tools: write ? [write] : turn.tools,
        messages: [
          {
            role: 'user',
            content: 'Create the file /tmp/localagents-doctor.txt containing hello.',
          },
        ],
      }),
    );
    const content = Array.isArray(tooled.json?.content) ? (tooled.json.content as unknown[]) : [];
    const call = content.find(
      (block): block is { type: string; input?: unknown } =>
        typeof block === 'object' &&
        block !== null &&
        (block as { type?: unknown }).type === 'tool_use',
    );
    checks.push(
      !okStatus(tooled)
        ? {
            id: 'tool-call',
            result: 'fail',
            detail: `a request with tools fails: ${errorText(tooled)}`,
            fix: /--[a-z-]+/.test(errorText(tooled))
              ? 'start the server with the flags the message names (vLLM: --enable-auto-tool-choice --tool-call-parser <parser>)'
              : 'check that the chat template supports tools (llama-server --jinja)',
          }
        : call && typeof call.input === 'object' && call.input !== null
          ? {
              id: 'tool-call',
              result: 'pass',
              detail: 'the model called Write with a parsed input',
            }
          : {
              id: 'tool-call',
              result: 'warn',
              detail: 'the model answered without calling the tool it was asked to use',
              fix: 'use a model trained for tool use, with its tool-call parser or template enabled',
            },
    );

    // 3. Streaming: Claude Code's event order.
    checks.push(streamed.check);

    // 4. count_tokens, which Claude Code calls before deciding to compact (asked directly, a plain turn).
    const counted = await post(
      `${baseUrl}/v1/messages/count_tokens`,
      { model: servedId, messages: [{ role: 'user', content: 'hello' }] },
      key,
    );
    checks.push(
      okStatus(counted) && typeof counted.json?.input_tokens === 'number'
        ? { id: 'count-tokens', result: 'pass', detail: 'the server counts tokens itself' }
        : {
            id: 'count-tokens',
            result: 'warn',
            detail: `the server has no count_tokens (${errorText(counted)}): the shim answers with an estimate`,
          },
    );

    // 5. The prompt cache: the same prefix twice.
    const again = await streamOnce(`${route.baseUrl}/v1/messages`, request({ stream: true }));
    const cached = again.usage?.cache_read_input_tokens;
    checks.push(
      cached === undefined || cached === null
        ? {
            id: 'cache',
            result: 'warn',
            detail:
              'the server reports no cached tokens: whether it reuses the prompt prefix cannot be seen',
          }
        : cached > 0
          ? {
              id: 'cache',
              result: 'pass',
              detail: `the second turn found ${cached} prompt tokens cached`,
            }
          : {
              id: 'cache',
              result: 'warn',
              detail:
                'the same prefix twice found nothing cached: every turn re-processes the whole prompt',
              fix: 'llama-server: keep --cache-reuse / prompt caching on; vLLM: --enable-prefix-caching',
            },
    );

    // 6. The overflow answer Claude Code compacts on.
    if (window === undefined) {
      checks.push({ id: 'overflow', result: 'skip', detail: 'the window is unknown' });
    } else {
      const oversize = await post(
        `${route.baseUrl}/v1/messages`,
        request({
          messages: [{ role: 'user', content: 'hello '.repeat(Math.ceil(window * 1.3)) }],
        }),
      );
      const message = errorText(oversize);
      checks.push(
        oversize.answer.ok &&
          oversize.answer.status === 400 &&
          message.includes('prompt is too long')
          ? {
              id: 'overflow',
              result: 'pass',
              detail: `a prompt over the window is answered ${message}: Claude Code compacts`,
            }
          : {
              id: 'overflow',
              result: 'fail',
              detail: `a prompt over the window got ${okStatus(oversize) ? 'a 200' : message}, not prompt is too long: Claude Code will not compact`,
            },
      );
    }

    // 7. Speed, measured on the way.
    checks.push(speedCheck(streamed));
  } finally {
    await route.close();
  }
  return checks;
}

interface Streamed {
  check: Check;
  usage:
    | { input_tokens?: number; output_tokens?: number; cache_read_input_tokens?: number | null }
    | undefined;
  /** When the first generated token arrived: the prompt's processing ends there. */
  firstTokenMs: number | undefined;
  totalMs: number;
}

/** A streamed POST read as it arrives: the whole text, and when the first generated token came. */
function streamTimed(
  url: string,
  body: unknown,
): Promise<{ status: number; text: string; firstTokenMs: number | undefined; totalMs: number }> {
  const started = performance.now();
  const payload = Buffer.from(JSON.stringify(body));
  return new Promise((resolve) => {
    const done = (status: number, text: string, firstTokenMs?: number): void =>
      resolve({ status, text, firstTokenMs, totalMs: performance.now() - started });
    const outgoing = httpRequest(
      url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': payload.length },
        signal: AbortSignal.timeout(120_000),
      },
      (response) => {
        let text = '';
        let firstTokenMs: number | undefined;
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          text += chunk;
          if (firstTokenMs === undefined && text.includes('content_block_delta'))
            firstTokenMs = performance.now() - started;
        });
        response.on('end', () => done(response.statusCode ?? 0, text, firstTokenMs));
        response.on('error', () => done(0, text, firstTokenMs));
      },
    );
    outgoing.on('error', () => done(0, ''));
    outgoing.end(payload);
  });
}

/** One streamed request: its events in order, its usage, and when its first token and its end came. */
async function streamOnce(url: string, body: unknown): Promise<Streamed> {
  const timed = await streamTimed(url, body);
  const { totalMs } = timed;
  const sent: Sent = {
    answer: {
      ok: true,
      status: timed.status,
      headers: new Headers(),
      body: timed.text,
      ms: totalMs,
    },
    ms: totalMs,
    json: undefined,
  };
  const text = timed.text;
  const events = text
    .split('\n\n')
    .map((chunk) => /^event: (\S+)/m.exec(chunk)?.[1])
    .filter((name): name is string => name !== undefined && name !== 'ping');
  let usage: Streamed['usage'];
  for (const chunk of text.split('\n\n')) {
    const data = /^data: (.*)$/m.exec(chunk)?.[1];
    if (!data) continue;
    try {
      const parsed = JSON.parse(data) as {
        type?: string;
        message?: { usage?: Streamed['usage'] };
        usage?: Streamed['usage'];
      };
      if (parsed.type === 'message_start') usage = { ...parsed.message?.usage };
      if (parsed.type === 'message_delta') usage = { ...usage, ...parsed.usage };
    } catch {
      // A broken event: the order check below says so.
    }
  }
  const ordered =
    events[0] === 'message_start' &&
    events.at(-1) === 'message_stop' &&
    events.at(-2) === 'message_delta' &&
    events.slice(1, -2).every((name) => name.startsWith('content_block_'));
  return {
    check: !okStatus(sent)
      ? { id: 'stream', result: 'fail', detail: `a streamed request fails: ${errorText(sent)}` }
      : ordered
        ? { id: 'stream', result: 'pass', detail: `${events.length} events in Claude Code's order` }
        : {
            id: 'stream',
            result: 'fail',
            detail: `events out of Claude Code's order: ${events.slice(0, 8).join(', ')}`,
          },
    usage,
    firstTokenMs: timed.firstTokenMs,
    totalMs,
  };
}

/** Prompt and generation speed from the run's first (uncached) turn, and what a job's first turn costs here. */
function speedCheck(first: Streamed): Check {
  const prompt = (first.usage?.input_tokens ?? 0) + (first.usage?.cache_read_input_tokens ?? 0);
  const output = first.usage?.output_tokens ?? 0;
  const prefillMs = first.firstTokenMs;
  if (prompt === 0 || prefillMs === undefined)
    return {
      id: 'speed',
      result: 'skip',
      detail: 'no token counts or tokens to measure speed with',
    };
  const perS = (tokens: number, ms: number): number =>
    Math.round((tokens / Math.max(ms, 1)) * 1000);
  const promptPerS = perS(prompt, prefillMs);
  const generation =
    output > 1 ? `, generation ${perS(output - 1, first.totalMs - prefillMs)} tokens/s` : '';
  const firstTurnS =
    Math.round((CLAUDE_CODE_FIXED_PROMPT_TOKENS / Math.max(promptPerS, 1)) * 10) / 10;
  return {
    id: 'speed',
    result: 'pass',
    detail: `prompt ${promptPerS} tokens/s (${prompt} uncached tokens before the first token in ${Math.round(prefillMs)} ms)${generation}: a job's first turn (about ${CLAUDE_CODE_FIXED_PROMPT_TOKENS} tokens) costs about ${firstTurnS} s before its first token`,
  };
}
