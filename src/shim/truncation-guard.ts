import { promptTooLong, type ClientError } from './errors.js';

/**
 * Ollama cuts a prompt longer than its window and answers 200 anyway (docs/reference/ollama-lmstudio.md §2
 * "Overflow"): whole messages go from the front, then the middle of what is left, so the model works without
 * Claude Code's system prompt and tools and nobody is told. The only trace is `usage.input_tokens`, the count of what
 * was kept. This guard stands between: it estimates each prompt in the backend's own tokens (a rate per byte learned
 * from the backend's counts on this route), refuses one that cannot fit before it is sent, has the answer held back
 * when the prompt could overflow, and reads the count that comes back. A truncated answer is replaced with
 * `prompt is too long`, which makes Claude Code compact instead of working blind. Pure: the relay does the I/O.
 */

/** Tokens a byte of request body costs before the backend has told us (Claude Code's 42 kB first prompt: ~10.5k). */
const DEFAULT_TOKENS_PER_BYTE = 0.25;
/** Learned rates come from conversation prompts this large (system prompt and tools, Claude Code's usual mix). */
const MIN_LEARNING_BYTES = 16 * 1024;
/**
 * The bounds of what a byte of body can cost. At most one token: a byte-level tokenizer never makes more tokens
 * than bytes (digits and CJK come close). At least a twentieth: long words, runs of spaces and JSON escapes are
 * cheap, and a whole turn of nothing but those is cheaper still than this. Measured on the emulator's rule, a turn
 * of Claude Code's costs 0.2 to 1 token a byte depending on what a tool printed.
 */
const MAX_TOKENS_PER_BYTE = 1;
const MIN_TOKENS_PER_BYTE = 0.05;
/** The chat template's own tokens (role markers, the tool preamble) that no byte of the body shows. */
const TEMPLATE_SLACK_TOKENS = 1024;
/** The same, for the few turns added since an anchor, either way. */
const ANCHOR_SLACK_TOKENS = 64;
/** Unanchored, a count under this share of the estimate (for a prompt that could overflow) is a cut. */
const UNANCHORED_CUT_RATIO = 0.5;
/** Ollama ≥ 0.30.11 keeps num_keep (4, or 5 with a BOS token) tokens from the front in its second stage. */
const NUM_KEEP = [4, 5];
/** Counts anchor this many conversations at once (Claude Code's main one, its subagents, other sessions). */
const MAX_ANCHORS = 64;

export type GuardDecision =
  /** The prompt is over the window even at its lowest: answer `prompt is too long` without sending. */
  | { kind: 'refuse'; estimate: number; window: number }
  /** It could overflow: send, but let no byte of the answer reach the client until its count is checked. */
  | { kind: 'hold'; estimate: number }
  /** It cannot overflow: stream as usual (the count is still checked at the end). */
  | { kind: 'pass'; estimate: number };

export interface TruncationVerdict {
  truncated: boolean;
  /** Our estimate of what was sent, for the `prompt is too long: N tokens > M maximum` answer. */
  estimate: number;
}

/** One prompt's size in tokens: the likely value, and the least and most it can be. */
interface Estimate {
  tokens: number;
  floor: number;
  worst: number;
  /** Counted from the conversation's last honest count plus what was added since. */
  anchored: boolean;
}

/**
 * Which conversation a prompt extends. A compaction request extends its conversation's last prompt (the compaction
 * instruction is appended to it) but starts nothing: it is estimated from the anchor and changes none (`extendsOnly`).
 */
export interface Conversation {
  key: string;
  extendsOnly: boolean;
}

export interface TruncationGuard {
  readonly window: number;
  /** The prompt a body of this size holds, in the backend's tokens as far as they have been learned. */
  estimate(bodyBytes: number, conversation?: Conversation): number;
  before(bodyBytes: number, conversation?: Conversation): GuardDecision;
  /** The backend's count for a body of that size: truncated or not. Learns the rate from an honest count. */
  after(
    bodyBytes: number,
    reportedInputTokens: number,
    conversation?: Conversation,
  ): TruncationVerdict;
}

/** The prompt sizes Ollama's cuts leave behind for a window (stage 2 of every release line, §2). */
export function truncationSizes(window: number): number[] {
  const half = NUM_KEEP.map((keep) => window - Math.max(Math.floor((window - keep) / 2), 1));
  return [...half, window - 1, window];
}

/**
 * Claude Code's prompts grow by appending within a conversation, so the last honest count of the same
 * conversation anchors the next one: it is at least that count, and only the bytes added since are uncertain. A
 * count below that floor, at or under the window, can only be a cut. A body no larger than its anchor (compaction
 * started the conversation over) is bounded whole. Nothing here ever calls an honest count a cut: the bounds are
 * bounds, and the exact sizes Ollama's second stage leaves are only read as a cut for a prompt that could overflow.
 */
export function createTruncationGuard(window: number): TruncationGuard {
  let rate = DEFAULT_TOKENS_PER_BYTE;
  const anchors = new Map<string, { bytes: number; tokens: number }>();
  // Body sizes a conversation is known not to fit in: a resend of one as large is refused before it is sent.
  const overflows = new Map<string, number>();
  const estimateOf = (bytes: number, conversation: Conversation | undefined): Estimate => {
    const anchor = conversation === undefined ? undefined : anchors.get(conversation.key);
    if (anchor && bytes >= anchor.bytes) {
      const added = bytes - anchor.bytes;
      return {
        tokens: Math.ceil(anchor.tokens + added * rate),
        // The same body can count a few tokens apart (ids, dates of equal length tokenise differently).
        floor: anchor.tokens + added * MIN_TOKENS_PER_BYTE - ANCHOR_SLACK_TOKENS,
        worst: anchor.tokens + added * MAX_TOKENS_PER_BYTE + ANCHOR_SLACK_TOKENS,
        anchored: true,
      };
    }
    return {
      tokens: Math.ceil(bytes * rate),
      floor: bytes * MIN_TOKENS_PER_BYTE,
      worst: bytes * MAX_TOKENS_PER_BYTE + TEMPLATE_SLACK_TOKENS,
      anchored: false,
    };
  };
  const remember = <T>(map: Map<string, T>, key: string, value: T): void => {
    map.delete(key);
    map.set(key, value);
    // The oldest conversation goes first: a long proxy session must not grow this without bound.
    if (map.size > MAX_ANCHORS) map.delete(map.keys().next().value ?? '');
  };
  return {
    window,
    estimate: (bytes, conversation) => estimateOf(bytes, conversation).tokens,
    before(bodyBytes, conversation) {
      const { tokens, floor, worst } = estimateOf(bodyBytes, conversation);
      const known =
        conversation?.extendsOnly === false ? overflows.get(conversation.key) : undefined;
      if ((known !== undefined && bodyBytes >= known) || floor > window)
        return { kind: 'refuse', estimate: Math.max(tokens, window + 1), window };
      // Streamed, an answer's blocks reach Claude Code before the count that would expose a cut (and Claude Code
      // keeps the blocks of a stream that ends in an error): held unless no tokenizer could make it overflow.
      if (worst >= window) return { kind: 'hold', estimate: tokens };
      return { kind: 'pass', estimate: tokens };
    },
    after(bodyBytes, reported, conversation) {
      const { tokens, floor, worst, anchored } = estimateOf(bodyBytes, conversation);
      const couldOverflow = worst >= window;
      const truncated =
        reported > 0 &&
        reported <= window &&
        (reported < floor ||
          (couldOverflow &&
            (truncationSizes(window).includes(reported) ||
              (!anchored && reported < tokens * UNANCHORED_CUT_RATIO))));
      // A compaction request's count says nothing about its conversation's next prompt: it anchors nothing.
      const own = conversation?.extendsOnly === false ? conversation.key : undefined;
      if (truncated) {
        if (own !== undefined) {
          anchors.delete(own);
          remember(overflows, own, bodyBytes);
        }
        return { truncated, estimate: Math.max(tokens, window + 1) };
      }
      // Learned from a conversation's own prompts only: a title request is the brief without the tools.
      if (own !== undefined && bodyBytes >= MIN_LEARNING_BYTES && reported > 0)
        rate = reported / bodyBytes;
      if (own !== undefined && reported > 0) {
        remember(anchors, own, { bytes: bodyBytes, tokens: reported });
        overflows.delete(own);
      }
      return { truncated, estimate: tokens };
    },
  };
}

/** How the relay treats one answer on a guarded route: held back or not, and the check of its prompt count. */
export interface AnswerCheck {
  hold: boolean;
  /** The prompt in the backend's tokens, as well as the guard can tell before the answer counts it. */
  estimate: number;
  /** The error to answer instead when the reported count shows a truncated prompt. */
  verify: (reportedInputTokens: number) => ClientError | undefined;
}

/** The check for one request of `bodyBytes`, as `decision` (not a refusal) said to treat it. */
export function answerCheck(
  guard: TruncationGuard,
  bodyBytes: number,
  decision: Exclude<GuardDecision, { kind: 'refuse' }>,
  conversation?: Conversation,
): AnswerCheck {
  return {
    hold: decision.kind === 'hold',
    estimate: decision.estimate,
    verify: (reported) => {
      const verdict = guard.after(bodyBytes, reported, conversation);
      return verdict.truncated ? promptTooLong(verdict.estimate, guard.window) : undefined;
    },
  };
}

/** What the backend did, for the request log: it answered as if it had read the whole prompt. */
export function truncationNote(reported: number): string {
  return `200 with usage.input_tokens ${reported}: the backend cut the prompt to fit its window and answered anyway`;
}
