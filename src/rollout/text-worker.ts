/**
 * The rollout coordinator's text worker (piscina; see text-pool.ts): the CPU work around the
 * model for one episode turn at a time, on a worker thread, so that the main thread, which feeds
 * the engine and drives the sandboxes, is not held up by it. It holds the run's tokenizer (made
 * from workerData once per thread) and does three things:
 * - `prompt`: renders the first prompt in ChatML and tokenizes it;
 * - `observe`: renders the new messages after a response (the ChatML delta) and tokenizes them,
 *   and counts their contents' tokens for the episode's context limit;
 * - `respond`: decodes a response's tokens and parses its action.
 * Each is a pure function of its input, so a rollout is the same wherever it runs.
 */
import { workerData } from 'node:worker_threads';
import { type ActionFormat, type AgentMessage, type ParsedAction, parseAction } from '../agent/scaffold.js';
import { Tokenizer } from '../tokenizer/tokenizer.js';
import { deltaText, promptText } from './chatml.js';

/** One job for the text worker. */
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

const { tokenizer: json, config } = workerData as { tokenizer: object; config: object };
const tokenizer = Tokenizer.fromJson(json, config);

/** Runs one job (piscina's entry point). */
export default function run(job: TextJob): TextResults[TextJob['op']] {
  switch (job.op) {
    case 'prompt': {
      const text = promptText(job.messages);
      return { text, tokens: tokenizer.encode(text) };
    }
    case 'observe':
      return {
        tokens: tokenizer.encode(deltaText(job.messages, job.responseOpen)),
        contextTokens: job.messages.reduce((a, m) => a + tokenizer.encode(m.content).length + 5, 0),
      };
    case 'respond': {
      const content = tokenizer.decode(job.tokens);
      return { content, action: parseAction(content, job.format) };
    }
  }
}
