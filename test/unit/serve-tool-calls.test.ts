/**
 * The Hermes / Qwen tool-call parser the server applies to chat completions when tools are
 * given: what becomes OpenAI tool_calls and what stays plain content.
 */
import { describe, expect, it } from 'vitest';
import { parseHermesToolCalls } from '../../src/serve/tool-calls.js';

const tools = new Set(['get_weather', 'search']);

describe('parseHermesToolCalls', () => {
  it('parses one call, its text before as content, arguments re-encoded as a JSON string', () => {
    const r = parseHermesToolCalls(
      'Let me look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
      tools,
    );
    expect(r?.content).toBe('Let me look.');
    expect(r?.toolCalls).toHaveLength(1);
    expect(r?.toolCalls[0]?.type).toBe('function');
    expect(r?.toolCalls[0]?.id).toMatch(/^call_[0-9a-f]{24}$/);
    expect(r?.toolCalls[0]?.function).toEqual({ name: 'get_weather', arguments: '{"city":"Paris"}' });
  });

  it('parses several calls, string arguments, absent arguments and an unclosed last call', () => {
    const r = parseHermesToolCalls(
      '<tool_call>{"name": "search", "arguments": "{\\"q\\": 1}"}</tool_call>\n<tool_call>{"name": "get_weather"}',
      tools,
    );
    expect(r?.content).toBeNull();
    expect(r?.toolCalls.map((c) => c.function)).toEqual([
      { name: 'search', arguments: '{"q":1}' },
      { name: 'get_weather', arguments: '{}' },
    ]);
  });

  it('leaves the text as content for anything else', () => {
    for (const text of [
      'no call here',
      '<tool_call>{"name": "get_weather", "arguments": {"city": "Pa', // cut mid-JSON
      '<tool_call>{"name": "delete_all", "arguments": {}}</tool_call>', // not a given tool
      '<tool_call>{"name": "search", "arguments": [1]}</tool_call>', // arguments not an object
      '<tool_call>{"name": "search", "arguments": {}}</tool_call> and more text',
      '<tool_call>[1, 2]</tool_call>',
    ])
      expect(parseHermesToolCalls(text, tools), text).toBeNull();
  });
});
