/** A small streamed `/v1/messages` body for shim tests: one user turn, overridable field by field. */
export function messagesBody(extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    model: 'qwen-test',
    max_tokens: 64,
    stream: true,
    messages: [{ role: 'user', content: 'Say hi.' }],
    ...extra,
  });
}
