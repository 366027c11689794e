/**
 * The text work around the model for one episode turn, as pure functions of a tokenizer and a
 * job, so that the rollout coordinator's worker threads (text-worker.ts) and its calling thread
 * (`textWorkers: false`) run the same code:
 * - `prompt`: renders the first prompt in ChatML and tokenizes it;
 * - `observe`: renders the new messages after a response (the ChatML delta) and tokenizes them,
 *   and counts their contents' tokens for the episode's context limit;
 * - `respond`: decodes a response's tokens and parses its action.
 */
import { type ActionFormat, type AgentMessage, type ParsedAction, parseAction } from '../agent/scaffold.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import { deltaTokens, promptText, promptTokens } from './chatml.js';

/** One job of text work. */
export type TextJob =
  | { op: 'prompt'; messages: AgentMessage[] }
  | { op: 'observe'; messages: AgentMessage[]; responseOpen: boolean }
  | { op: 'respond'; tokens: Int32Array; format: ActionFormat };

/** What each job gives back. */
export interface TextResults {
  prompt: { text: string; tokens: Int32Array };
  /** `contextTokens`: Σ (tokens of each message's content + 5), the context limit's estimate. */
  observe: { tokens: Int32Array; contextTokens: number };
  respond: { content: string; action: ParsedAction };
}

/** Runs one job with `tokenizer`. */
export function runTextJob<K extends TextJob['op']>(tokenizer: Tokenizer, job: TextJob & { op: K }): TextResults[K];
export function runTextJob(tokenizer: Tokenizer, job: TextJob): TextResults[TextJob['op']] {
  switch (job.op) {
    case 'prompt': {
      // The contents' special token strings stay text: only the template's markers are special.
      return { text: promptText(job.messages), tokens: promptTokens(job.messages, tokenizer) };
    }
    case 'observe':
      return {
        tokens: deltaTokens(job.messages, job.responseOpen, tokenizer),
        contextTokens: job.messages.reduce(
          (a, m) => a + tokenizer.encode(m.content, { specials: false }).length + 5,
          0,
        ),
      };
    case 'respond': {
      const content = tokenizer.decode(job.tokens);
      return { content, action: parseAction(content, job.format) };
    }
  }
}
