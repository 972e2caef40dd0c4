/**
 * normalizeRequest on Claude Code's real first request (35–49 KB, one system message to fold) and on a 1 MB
 * body with nothing to rewrite, against the two baselines any inspection of the body pays: JSON.parse alone, and
 * parse + re-serialise (what a relay that always rewrites would pay). The 1 MB case must take the fast path (the
 * body forwarded as the same bytes, never re-serialised): asserted before anything is timed.
 */
import { bench, describe } from 'vitest';
import { foldSystemMessages } from '../src/shim/fold-system.js';
import {
  normalizeRequest,
  type AnthropicRequest,
  type NormalizeRoute,
} from '../src/shim/normalize.js';
import { firstTurnBody, megabyteBody } from './support.js';

const route: NormalizeRoute = { backend: 'llama.cpp', servedId: 'qwen-test' };

const firstTurn = firstTurnBody();
const megabyte = megabyteBody(firstTurn, route.servedId);

// Equal outputs before timing: the fast path forwards the very bytes; the fold matches foldSystemMessages.
const untouched = normalizeRequest(megabyte, route);
if (untouched.kind !== 'untouched')
  throw new Error(`1 MB body: expected the fast path, got ${untouched.kind}`);
const rewritten = normalizeRequest(firstTurn, route);
if (rewritten.kind !== 'rewritten') throw new Error('first turn: expected a rewrite');
const expectedMessages = foldSystemMessages(
  (JSON.parse(firstTurn.toString('utf8')) as AnthropicRequest).messages,
).messages;
const forwardedMessages = (JSON.parse(rewritten.body.toString('utf8')) as AnthropicRequest)
  .messages;
if (JSON.stringify(forwardedMessages) !== JSON.stringify(expectedMessages))
  throw new Error('first turn: fold differs');
process.stdout.write(
  `normalize: first turn ${firstTurn.length} B → ${rewritten.body.length} B (${rewritten.rewrites.join(', ')}); ` +
    `${megabyte.length} B body forwarded untouched (fast path)\n`,
);

describe(`1 MB body with nothing to rewrite (${(megabyte.length / 1e6).toFixed(2)} MB)`, () => {
  bench('baseline: JSON.parse only', () => {
    JSON.parse(megabyte.toString('utf8'));
  });
  bench('normalizeRequest (fast path)', () => {
    normalizeRequest(megabyte, route);
  });
  bench('baseline: parse + re-serialise', () => {
    Buffer.from(JSON.stringify(JSON.parse(megabyte.toString('utf8'))));
  });
});

describe(`Claude Code first turn (${(firstTurn.length / 1e3).toFixed(1)} KB, system message folded)`, () => {
  bench('baseline: JSON.parse only', () => {
    JSON.parse(firstTurn.toString('utf8'));
  });
  bench('normalizeRequest (fold + billing)', () => {
    normalizeRequest(firstTurn, route);
  });
  bench('baseline: parse + re-serialise', () => {
    Buffer.from(JSON.stringify(JSON.parse(firstTurn.toString('utf8'))));
  });
});
