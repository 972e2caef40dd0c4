import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

/**
 * A scripted Anthropic Messages backend for the real `claude` as a top-level client: each request's
 * body goes to `decide`, whose answer (text or one tool call) is streamed back as Anthropic SSE. It
 * plays the orchestrating model in tests of our MCP tools; every request is recorded in order.
 */
export type Turn = { text: string } | { tool: string; input: Record<string, unknown> };

export interface MessagesBody {
  model?: string;
  tools?: { name: string }[];
  messages: { role: string; content: unknown }[];
  [key: string]: unknown;
}

export interface AnthropicBackend {
  url: string;
  /** Every /v1/messages body, in arrival order (count_tokens excluded). */
  requests: { body: MessagesBody; raw: string }[];
  close(): Promise<void>;
}

function sse(res: ServerResponse, events: [string, unknown][]): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const [event, data] of events)
    res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  res.end();
}

function answer(res: ServerResponse, id: string, model: string, turn: Turn): void {
  const block =
    'text' in turn
      ? { start: { type: 'text', text: '' }, delta: { type: 'text_delta', text: turn.text } }
      : {
          start: { type: 'tool_use', id: `toolu_${id}`, name: turn.tool, input: {} },
          delta: { type: 'input_json_delta', partial_json: JSON.stringify(turn.input) },
        };
  sse(res, [
    [
      'message_start',
      {
        type: 'message_start',
        message: {
          id: `msg_${id}`,
          type: 'message',
          role: 'assistant',
          model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 100, output_tokens: 0 },
        },
      },
    ],
    ['content_block_start', { type: 'content_block_start', index: 0, content_block: block.start }],
    ['content_block_delta', { type: 'content_block_delta', index: 0, delta: block.delta }],
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    [
      'message_delta',
      {
        type: 'message_delta',
        delta: { stop_reason: 'text' in turn ? 'end_turn' : 'tool_use', stop_sequence: null },
        usage: { output_tokens: 10 },
      },
    ],
    ['message_stop', { type: 'message_stop' }],
  ]);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export async function startAnthropicBackend(
  decide: (body: MessagesBody) => Turn,
): Promise<AnthropicBackend> {
  const requests: AnthropicBackend['requests'] = [];
  let served = 0;
  const server = createServer((req, res) => {
    readBody(req)
      .then((raw) => {
        const path = req.url ?? '';
        if (req.method !== 'POST' || !path.startsWith('/v1/messages')) {
          res.writeHead(404, { 'content-type': 'application/json' }).end('{}');
          return;
        }
        if (path.startsWith('/v1/messages/count_tokens')) {
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ input_tokens: Math.ceil(raw.length / 4) }));
          return;
        }
        const body = JSON.parse(raw) as MessagesBody;
        requests.push({ body, raw });
        served += 1;
        let turn: Turn;
        try {
          turn = decide(body);
        } catch (error) {
          turn = { text: `backend script failed: ${String(error)}` };
        }
        answer(res, String(served), body.model ?? 'claude', turn);
      })
      .catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    url: `http://127.0.0.1:${address.port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The text of a message's content (string or blocks, tool_result contents included). */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((block: unknown) => {
      if (typeof block !== 'object' || block === null) return '';
      const record = block as { text?: unknown; content?: unknown };
      if (typeof record.text === 'string') return record.text;
      return contentText(record.content);
    })
    .join('\n');
}

/** The tool_use blocks of the assistant turns and the tool_result answering each, in order. */
export function toolExchanges(
  body: MessagesBody,
): { name: string; input: unknown; result: string }[] {
  const results = new Map<string, string>();
  for (const message of body.messages) {
    if (!Array.isArray(message.content)) continue;
    for (const block of message.content as {
      type?: string;
      tool_use_id?: string;
      content?: unknown;
    }[])
      if (block.type === 'tool_result' && block.tool_use_id)
        results.set(block.tool_use_id, contentText(block.content));
  }
  const calls: { name: string; input: unknown; result: string }[] = [];
  for (const message of body.messages) {
    if (message.role !== 'assistant' || !Array.isArray(message.content)) continue;
    for (const block of message.content as {
      type?: string;
      id?: string;
      name?: string;
      input?: unknown;
    }[])
      if (block.type === 'tool_use' && block.id && block.name)
        calls.push({ name: block.name, input: block.input, result: results.get(block.id) ?? '' });
  }
  return calls;
}
