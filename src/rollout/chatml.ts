/**
 * ChatML rendering a delta at a time, shared by the rollouts (which append each new observation
 * to a session) and the demonstrations (which are tokenized the same way, so the warm-start data
 * and the rollouts see identical token sequences): the first prompt with the assistant header,
 * then per turn the response's tokens, its <|im_end|>, and the next observation's delta.
 */
import type { AgentMessage } from '../agent/scaffold.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';

/** One message in ChatML. */
export function chatml(role: string, content: string): string {
  return `<|im_start|>${role}\n${content}<|im_end|>\n`;
}

/** The first prompt: every message so far and the assistant header. */
export function promptText(messages: AgentMessage[]): string {
  return `${messages.map((m) => chatml(m.role, m.content)).join('')}<|im_start|>assistant\n`;
}

/**
 * What follows a response: its missing <|im_end|> when it was cut by length, the newline after
 * it, the new messages and the next assistant header.
 */
export function deltaText(messages: AgentMessage[], responseOpen: boolean): string {
  return `${responseOpen ? '<|im_end|>' : ''}\n${messages.map((m) => chatml(m.role, m.content)).join('')}<|im_start|>assistant\n`;
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
  push(tokenizer.encode(promptText(messages.slice(0, i))), 0);
  let turn = 0;
  while (i < messages.length) {
    const m = messages[i] as AgentMessage;
    const w = trained(turn) ? 1 : 0;
    push(tokenizer.encode(m.content), w);
    push([imEnd], w);
    turn++;
    let j = i + 1;
    while (j < messages.length && (messages[j] as AgentMessage).role !== 'assistant') j++;
    if (j > i + 1) push(tokenizer.encode(deltaText(messages.slice(i + 1, j), false)), 0);
    i = j;
  }
  return { tokens: Int32Array.from(tokens), lossMask: Float32Array.from(mask) };
}
