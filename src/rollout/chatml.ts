/**
 * ChatML rendering a delta at a time, shared by the rollouts (which append each new observation
 * to a session) and the demonstrations (which are tokenized the same way, so the warm-start data
 * and the rollouts see identical token sequences): the first prompt with the assistant header,
 * then per turn the response's tokens, its <|im_end|>, and the next observation's delta.
 */
import type { AgentMessage } from '../agent/scaffold.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';

/**
 * A piece of ChatML: one of the template's own markers (a special token) or text, whose special
 * token strings are plain text (an issue or an observation may quote `<|im_end|>`; as a special
 * token it would end the turn the model sees, and the rollout would train on a false boundary).
 */
type Piece = { marker: string } | { text: string };

const IM_START = { marker: '<|im_start|>' };
const IM_END = { marker: '<|im_end|>' };

/** The pieces of one message. */
function messagePieces(role: string, content: string): Piece[] {
  return [IM_START, { text: `${role}\n${content}` }, IM_END, { text: '\n' }];
}

/** The pieces of the first prompt: every message so far and the assistant header. */
function promptPieces(messages: AgentMessage[]): Piece[] {
  return [...messages.flatMap((m) => messagePieces(m.role, m.content)), IM_START, { text: 'assistant\n' }];
}

/** The pieces that follow a response (see {@link deltaText}). */
function deltaPieces(messages: AgentMessage[], responseOpen: boolean): Piece[] {
  return [
    ...(responseOpen ? [IM_END] : []),
    { text: '\n' },
    ...messages.flatMap((m) => messagePieces(m.role, m.content)),
    IM_START,
    { text: 'assistant\n' },
  ];
}

/** The text of pieces. */
function piecesText(pieces: Piece[]): string {
  return pieces.map((p) => ('marker' in p ? p.marker : p.text)).join('');
}

/**
 * The token ids of pieces: each marker as the template's special token, the text between two
 * markers encoded as one plain text (so that text without special token strings encodes exactly
 * as `tokenizer.encode` of the whole rendering would).
 */
function piecesTokens(pieces: Piece[], tokenizer: Tokenizer): Int32Array {
  const out: number[] = [];
  let text = '';
  const flush = () => {
    if (text !== '') for (const id of tokenizer.encode(text, { specials: false })) out.push(id);
    text = '';
  };
  for (const p of pieces) {
    if ('text' in p) text += p.text;
    else {
      flush();
      // A marker the tokenizer lacks encodes as its text, as a rendering's encode would.
      for (const id of tokenizer.encode(p.marker)) out.push(id);
    }
  }
  flush();
  return Int32Array.from(out);
}

/** One message in ChatML. */
export function chatml(role: string, content: string): string {
  return piecesText(messagePieces(role, content));
}

/**
 * One message's token ids as a rendering holds them: its markers special, its role and content
 * plain text, and the newline after it. A prompt's tokens begin with its first message's exactly,
 * since the text between two markers is encoded on its own.
 */
export function messageTokens(role: string, content: string, tokenizer: Tokenizer): Int32Array {
  return piecesTokens(messagePieces(role, content), tokenizer);
}

/** The first prompt: every message so far and the assistant header. */
export function promptText(messages: AgentMessage[]): string {
  return piecesText(promptPieces(messages));
}

/**
 * The first prompt's token ids ({@link promptText} tokenized): the template's markers are
 * special tokens, the messages' contents plain text even where they spell a special token.
 */
export function promptTokens(messages: AgentMessage[], tokenizer: Tokenizer): Int32Array {
  return piecesTokens(promptPieces(messages), tokenizer);
}

/**
 * What follows a response: its missing <|im_end|> when it was cut by length, the newline after
 * it, the new messages and the next assistant header.
 */
export function deltaText(messages: AgentMessage[], responseOpen: boolean): string {
  return piecesText(deltaPieces(messages, responseOpen));
}

/** {@link deltaText}'s token ids, the contents plain text as in {@link promptTokens}. */
export function deltaTokens(messages: AgentMessage[], responseOpen: boolean, tokenizer: Tokenizer): Int32Array {
  return piecesTokens(deltaPieces(messages, responseOpen), tokenizer);
}

/**
 * A finished conversation (system, user, then assistant/user turns) as the rollouts would have
 * tokenized it: tokens and a mask that is 1 on each response and its <|im_end|>. `trained(i)`
 * says whether the i-th response is trained (e.g. not a format error).
 */
export function conversationTokens(
  messages: AgentMessage[],
  tokenizer: Tokenizer,
  trained: (turn: number) => boolean = () => true,
): { tokens: Int32Array; lossMask: Float32Array } {
  const imEnd = tokenizer.tokenToId('<|im_end|>') as number;
  const tokens: number[] = [];
  const mask: number[] = [];
  const push = (ids: ArrayLike<number>, m: number) => {
    for (let k = 0; k < ids.length; k++) {
      tokens.push(ids[k] as number);
      mask.push(m);
    }
  };
  let i = messages.findIndex((m) => m.role === 'assistant');
  if (i < 0) i = messages.length;
  push(promptTokens(messages.slice(0, i), tokenizer), 0);
  let turn = 0;
  while (i < messages.length) {
    const m = messages[i] as AgentMessage;
    const w = trained(turn) ? 1 : 0;
    // A response is content too: its text re-encoded plainly, as the model's own tokens would be.
    push(tokenizer.encode(m.content, { specials: false }), w);
    push([imEnd], w);
    turn++;
    let j = i + 1;
    while (j < messages.length && (messages[j] as AgentMessage).role !== 'assistant') j++;
    if (j > i + 1) push(deltaTokens(messages.slice(i + 1, j), false, tokenizer), 0);
    i = j;
  }
  return { tokens: Int32Array.from(tokens), lossMask: Float32Array.from(mask) };
}
