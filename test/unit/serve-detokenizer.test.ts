/**
 * The server's incremental detokenizer on a real trained byte-level BPE tokenizer: deltas
 * concatenate to the full decode, multi-byte characters split across byte tokens never yield a
 * U+FFFD mid-stream, a genuinely invalid byte still comes out, and the cost per token stays
 * bounded (no re-decode of the whole completion).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { endsInPartialChar, IncrementalDetokenizer, tokenBytesOf } from '../../src/serve/detokenizer.js';
import { Tokenizer } from '../../src/tokenizer/tokenizer.js';

// ASCII only: every non-ASCII character is left as its byte tokens (no merges learned for them).
const tokenizer = Tokenizer.train(
  Array.from({ length: 60 }, (_, i) => `def f_${i}(x):\n    return x * ${i} + 1\n`),
  { vocabSize: 300 },
);

function stream(ids: ArrayLike<number>): string[] {
  const d = new IncrementalDetokenizer(tokenizer);
  const out = Array.from(ids, (t) => d.push(t));
  out.push(d.flush());
  return out;
}

describe('IncrementalDetokenizer', () => {
  it('holds a character split across byte tokens until its last byte, and matches the full decode', () => {
    const text = 'x = "caf\u00e9 \u20ac5 \u65e5\u672c \u{1F600}!"';
    const ids = tokenizer.encode(text);
    expect(ids.length).toBeGreaterThan(text.length / 2); // the non-ASCII characters are byte tokens
    const deltas = stream(ids);
    expect(deltas.join('')).toBe(text);
    for (const d of deltas) expect(d).not.toContain('\uFFFD');
    // The emoji's four bytes are four tokens: three of them emit nothing.
    const emoji = Array.from(tokenizer.encode('\u{1F600}'));
    expect(emoji.length).toBe(4);
    expect(stream(emoji)).toEqual(['', '', '', '\u{1F600}', '']);
  });

  it('equals the full decode for random token sequences (special tokens skipped), with no extra U+FFFD', () => {
    const V = tokenizer.vocabSize;
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: V - 1 }), { maxLength: 40 }), (ids) => {
        const whole = tokenizer.decode(ids, { skipSpecialTokens: true });
        const deltas = stream(ids);
        expect(deltas.join('')).toBe(whole);
        // A U+FFFD in a delta only ever stands for bytes the whole decode also replaces.
        if (!whole.includes('\uFFFD')) for (const d of deltas) expect(d).not.toContain('\uFFFD');
      }),
      { numRuns: 1000 },
    );
  });

  it('emits a lone continuation byte (invalid, nothing completes it) at once, as the decoder renders it', () => {
    const cont = tokenizer.encode('\u00e9')[1] as number; // 0xA9
    const d = new IncrementalDetokenizer(tokenizer);
    expect(d.push(tokenizer.encode('a')[0] as number)).toBe('a');
    expect(d.push(cont)).toBe('\uFFFD');
  });

  it('a partial character at the end comes out on flush', () => {
    const lead = tokenizer.encode('\u20ac')[0] as number; // 0xE2
    const d = new IncrementalDetokenizer(tokenizer);
    expect(d.push(lead)).toBe('');
    expect(d.flush()).toBe('\uFFFD');
  });

  it('decodes a bounded window per token, not the whole completion', () => {
    let decoded = 0;
    const counting = Object.create(tokenizer) as Tokenizer;
    counting.toJson = () => tokenizer.toJson();
    counting.decode = (ids, o) => {
      decoded += ids.length;
      return tokenizer.decode(ids, o);
    };
    const ids = tokenizer.encode('    return x * 7 + 1\n'.repeat(200));
    const d = new IncrementalDetokenizer(counting, { tokenBytes: tokenBytesOf(tokenizer) });
    let text = '';
    for (const t of ids) text += d.push(t);
    text += d.flush();
    expect(text).toBe(tokenizer.decode(ids));
    expect(decoded).toBeLessThan(6 * ids.length); // a full re-decode per token would be ~ids.length^2 / 2
  });
});

describe('endsInPartialChar', () => {
  it('tells an incomplete UTF-8 tail from complete or invalid ones', () => {
    expect(endsInPartialChar([0x61])).toBe(false);
    expect(endsInPartialChar([0xe2])).toBe(true);
    expect(endsInPartialChar([0xe2, 0x82])).toBe(true);
    expect(endsInPartialChar([0xe2, 0x82, 0xac])).toBe(false);
    expect(endsInPartialChar([0xf0, 0x9f, 0x98])).toBe(true);
    expect(endsInPartialChar([0xa9])).toBe(false);
    expect(endsInPartialChar([0xc0])).toBe(false); // never a lead byte
  });
});
