/**
 * The chat-specific part of a /v1/chat/completions request: messages (string content or text
 * parts, assistant tool_calls, tool results), tools, tool_choice and response_format, checked and
 * turned into what the chat template renders. What the server cannot honour is a 400.
 */
import { SwerlError } from '../errors.js';
import type { ChatMessage, Tokenizer } from '../tokenizer/tokenizer.js';
import { badParam } from './http-error.js';
import type { Body } from './params.js';

/** A checked chat request: the prompt's token ids and what the answer's tool parsing needs. */
export interface ChatPrompt {
  /**
   * The chat template's rendering as token ids ({@link Tokenizer.encodeChat}): the template's own
   * markers are special tokens, the messages' contents plain text even where they spell one.
   */
  ids: Int32Array;
  /** Names of the tools given (empty: no tool parsing). */
  toolNames: Set<string>;
  /** parallel_tool_calls: false keeps only the first parsed call. */
  parallelToolCalls: boolean;
}

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);

/** The text of a message's content: a string, or an array of text parts joined by newlines (as vLLM). */
function contentText(content: unknown, where: string, partTypes: ReadonlySet<string>): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content))
    throw badParam(`${where}.content`, `${where}.content must be a string or an array of content parts`);
  return content
    .map((p, j) => {
      const part = p as Body;
      const at = `${where}.content[${j}]`;
      if (typeof part !== 'object' || part === null || typeof part.type !== 'string')
        throw badParam(at, `${at} must be a content part { type, ... }`);
      if (!partTypes.has(part.type))
        throw badParam(
          `${at}.type`,
          `${at}: content parts of type '${part.type}' are not supported by this text-only server (only ${[...partTypes].join(', ')})`,
        );
      const text = part.type === 'refusal' ? part.refusal : part.text;
      if (typeof text !== 'string')
        throw badParam(at, `${at} needs a string '${part.type === 'refusal' ? 'refusal' : 'text'}'`);
      return text;
    })
    .join('\n');
}

const TEXT = new Set(['text']);
const ASSISTANT_PARTS = new Set(['text', 'refusal']);

/** Checks `messages` and returns them as the chat template takes them. */
export function templateMessages(messages: unknown): ChatMessage[] {
  if (!Array.isArray(messages) || messages.length === 0)
    throw badParam('messages', 'messages must be a non-empty array');
  return messages.map((m, i) => {
    const where = `messages[${i}]`;
    if (typeof m !== 'object' || m === null || Array.isArray(m)) throw badParam(where, `${where} must be an object`);
    const msg = m as Body;
    const role = msg.role;
    if (typeof role !== 'string' || !ROLES.has(role))
      throw badParam(
        `${where}.role`,
        `${where}.role must be one of ${[...ROLES].join(', ')}, got ${JSON.stringify(role)}${role === 'function' ? ' (function messages are deprecated: use tool)' : ''}`,
      );
    const out: ChatMessage = { role: role === 'developer' ? 'system' : role, content: '' };
    if (msg.name !== undefined && msg.name !== null) {
      if (typeof msg.name !== 'string') throw badParam(`${where}.name`, `${where}.name must be a string`);
      out.name = msg.name;
    }
    for (const [k, v] of Object.entries(msg)) {
      if (['role', 'content', 'name', 'tool_calls', 'tool_call_id'].includes(k)) continue;
      // Fields a client echoes back from an earlier response: fine while they say nothing.
      const empty = v === null || (Array.isArray(v) && v.length === 0);
      if (!(empty && ['refusal', 'annotations', 'audio', 'function_call'].includes(k)))
        throw badParam(`${where}.${k}`, `${where}: field '${k}' is not supported${empty ? '' : ' (only null)'}`);
    }
    if (role === 'assistant') {
      const calls = msg.tool_calls;
      if (calls !== undefined && calls !== null) {
        if (!Array.isArray(calls) || calls.length === 0)
          throw badParam(`${where}.tool_calls`, `${where}.tool_calls must be a non-empty array`);
        out.tool_calls = calls.map((c, j) => toolCall(c, `${where}.tool_calls[${j}]`));
      }
      if (msg.content === null || msg.content === undefined) {
        if (!out.tool_calls)
          throw badParam(`${where}.content`, `${where}: an assistant message needs content or tool_calls`);
      } else out.content = contentText(msg.content, where, ASSISTANT_PARTS);
    } else {
      if (msg.tool_calls !== undefined)
        throw badParam(`${where}.tool_calls`, `${where}: only assistant messages have tool_calls`);
      out.content = contentText(msg.content, where, TEXT);
    }
    if (role === 'tool') {
      if (typeof msg.tool_call_id !== 'string')
        throw badParam(`${where}.tool_call_id`, `${where}: a tool message needs a string tool_call_id`);
      out.tool_call_id = msg.tool_call_id;
    } else if (msg.tool_call_id !== undefined)
      throw badParam(`${where}.tool_call_id`, `${where}: only tool messages have tool_call_id`);
    return out;
  });
}

/** An assistant's tool call, its JSON arguments parsed into an object (what HF templates expect, as vLLM does). */
function toolCall(c: unknown, where: string): Record<string, unknown> {
  const call = c as Body;
  const fn = call?.function as Body | undefined;
  if (typeof call !== 'object' || call === null || call.type !== 'function' || typeof fn !== 'object' || fn === null)
    throw badParam(where, `${where} must be { id, type: 'function', function: { name, arguments } }`);
  if (typeof fn.name !== 'string') throw badParam(`${where}.function.name`, `${where}.function.name must be a string`);
  if (typeof fn.arguments !== 'string')
    throw badParam(`${where}.function.arguments`, `${where}.function.arguments must be a JSON string`);
  let args: unknown;
  try {
    args = JSON.parse(fn.arguments);
  } catch {
    throw badParam(`${where}.function.arguments`, `${where}.function.arguments is not valid JSON`);
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args))
    throw badParam(`${where}.function.arguments`, `${where}.function.arguments must encode a JSON object`);
  return {
    id: typeof call.id === 'string' ? call.id : '',
    type: 'function',
    function: { name: fn.name, arguments: args },
  };
}

/** Checks `tools` ([{ type: 'function', function: { name, description?, parameters? } }]). */
function checkTools(tools: unknown): Body[] {
  if (!Array.isArray(tools) || tools.length === 0) throw badParam('tools', 'tools must be a non-empty array');
  for (const [i, t] of tools.entries()) {
    const fn = (t as Body)?.function as Body | undefined;
    if ((t as Body)?.type !== 'function' || typeof fn !== 'object' || fn === null || typeof fn.name !== 'string')
      throw badParam(`tools[${i}]`, `tools[${i}] must be { type: 'function', function: { name, ... } }`);
  }
  return tools as Body[];
}

/**
 * Renders a chat request with the tokenizer's chat template and encodes it, the messages'
 * contents as plain text (a literal `<|im_end|>` in a message does not end its turn). Refused: tools or assistant
 * tool_calls with a template that never mentions them (they would be dropped silently),
 * tool_choice other than 'auto' / 'none' (forcing a call needs guided decoding), response_format
 * other than text, and template errors (raise_exception) as 400s.
 */
export function renderChat(body: Body, tokenizer: Tokenizer): ChatPrompt {
  const messages = templateMessages(body.messages);
  const source = String((tokenizer.toJson().config as Body).chat_template ?? '');
  const rf = body.response_format;
  if (rf !== undefined && rf !== null && (rf as Body)?.type !== 'text')
    throw badParam(
      'response_format',
      `response_format ${JSON.stringify((rf as Body)?.type ?? rf)} is not supported: this server has no guided decoding (only { type: 'text' })`,
    );
  let tools: Body[] | undefined;
  if (body.tools !== undefined && body.tools !== null) {
    tools = checkTools(body.tools);
    if (!/\btools\b/.test(source)) throw badParam('tools', "this model's chat template does not render tools");
  }
  const choice = body.tool_choice ?? 'auto';
  if (choice !== 'auto' && choice !== 'none')
    throw badParam(
      'tool_choice',
      `tool_choice ${JSON.stringify(choice)} is not supported: only 'auto' and 'none' (forcing a call needs guided decoding)`,
    );
  const parallel = body.parallel_tool_calls ?? true;
  if (typeof parallel !== 'boolean') throw badParam('parallel_tool_calls', 'parallel_tool_calls must be a boolean');
  if (messages.some((m) => m.tool_calls) && !/\btool_calls\b/.test(source))
    throw badParam('messages', "this model's chat template does not render assistant tool_calls");
  let ids: Int32Array;
  try {
    ids = tokenizer.encodeChat(messages, { addGenerationPrompt: true, ...(tools ? { tools } : {}) });
  } catch (e) {
    if (e instanceof SwerlError && e.code !== 'INVALID_ARGUMENT') throw e;
    throw badParam('messages', `the chat template refused the messages: ${(e as Error).message}`);
  }
  const toolNames = new Set<string>(
    tools && choice === 'auto' ? tools.map((t) => (t.function as Body).name as string) : [],
  );
  return { ids, toolNames, parallelToolCalls: parallel };
}
