/**
 * Tool calls in the Hermes / Qwen format, as vLLM's `hermes` tool parser reads them: the model
 * writes `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` blocks after its text. The
 * completion becomes OpenAI `tool_calls` only when every block parses; otherwise the text stays
 * plain content (never a half-parsed answer).
 */
import { randomUUID } from 'node:crypto';

/** The tag that opens a tool call. */
export const TOOL_CALL_OPEN = '<tool_call>';
const TOOL_CALL_CLOSE = '</tool_call>';

/** One parsed call, in OpenAI's `tool_calls` shape. */
export interface ParsedToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/**
 * The tool calls of a completion's text, or null when it has none that parse. Parsed: the text
 * before the first `<tool_call>` is the content (null when only whitespace); then one or more
 * `<tool_call>` JSON `</tool_call>` blocks separated by whitespace only, the last one's closing
 * tag optional (a model stopping at its end token right after the JSON); each JSON an object with
 * a `name` among `toolNames` and `arguments` an object (absent: {}), or a string holding one.
 * Anything else after the first `<tool_call>` makes the whole text plain content.
 */
export function parseHermesToolCalls(
  text: string,
  toolNames: ReadonlySet<string>,
): { content: string | null; toolCalls: ParsedToolCall[] } | null {
  const first = text.indexOf(TOOL_CALL_OPEN);
  if (first < 0) return null;
  const toolCalls: ParsedToolCall[] = [];
  let at = first;
  while (at < text.length) {
    if (!text.startsWith(TOOL_CALL_OPEN, at)) return null;
    const start = at + TOOL_CALL_OPEN.length;
    const close = text.indexOf(TOOL_CALL_CLOSE, start);
    const body = text.slice(start, close < 0 ? text.length : close);
    const call = parseCall(body, toolNames);
    if (!call) return null;
    toolCalls.push(call);
    if (close < 0) break;
    at = close + TOOL_CALL_CLOSE.length;
    while (at < text.length && /\s/.test(text[at] as string)) at++;
  }
  const content = text.slice(0, first).trim();
  return { content: content === '' ? null : content, toolCalls };
}

function parseCall(body: string, toolNames: ReadonlySet<string>): ParsedToolCall | null {
  let v: unknown;
  try {
    v = JSON.parse(body);
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const { name, arguments: args } = v as { name?: unknown; arguments?: unknown };
  if (typeof name !== 'string' || !toolNames.has(name)) return null;
  let parsed: unknown = args ?? {};
  if (typeof parsed === 'string') {
    try {
      parsed = JSON.parse(parsed);
    } catch {
      return null;
    }
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return null;
  return {
    id: `call_${randomUUID().replace(/-/g, '').slice(0, 24)}`,
    type: 'function',
    function: { name, arguments: JSON.stringify(parsed) },
  };
}
