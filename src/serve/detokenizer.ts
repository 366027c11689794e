/**
 * Incremental detokenization for streamed completions: each new token costs the decode of a short
 * window (the tokens since the last emitted text and the window before it, as Hugging Face TGI
 * and vLLM do), never the whole completion again. Text is emitted only up to a complete UTF-8
 * character: a character split across tokens is held until its last byte arrives, so no U+FFFD
 * replacement for a partial character is ever sent.
 */
import { CHAR_TO_BYTE } from '../tokenizer/byte-level.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';

/** The raw bytes of a token, or null when the tokenizer cannot say (not byte-level). */
export type TokenBytes = (id: number) => Uint8Array | null;

/**
 * The bytes each token stands for, for byte-level BPE tokenizers (GPT-2 / Qwen style): the vocab
 * string mapped back through the byte-to-unicode table; added tokens are their UTF-8 text. Other
 * tokenizers get null for every id (callers then fall back on the decoded text).
 */
export function tokenBytesOf(tokenizer: Tokenizer): TokenBytes {
  const json = tokenizer.toJson().tokenizer as {
    decoder?: { type?: string; decoders?: { type?: string }[] } | null;
    model?: { vocab?: Record<string, number> };
    added_tokens?: { id: number; content: string }[];
  };
  const d = json.decoder;
  const byteLevel =
    d?.type === 'ByteLevel' || (d?.type === 'Sequence' && d.decoders?.some((x) => x.type === 'ByteLevel'));
  if (!byteLevel || !json.model?.vocab) return () => null;
  const byId = new Map<number, Uint8Array | null>();
  for (const [s, id] of Object.entries(json.model.vocab)) {
    const bytes: number[] = [];
    let ok = true;
    for (const ch of s) {
      const b = CHAR_TO_BYTE.get(ch);
      if (b === undefined) ok = false;
      else bytes.push(b);
    }
    byId.set(id, ok ? Uint8Array.from(bytes) : null);
  }
  for (const a of json.added_tokens ?? []) byId.set(a.id, new Uint8Array(Buffer.from(a.content, 'utf8')));
  return (id) => byId.get(id) ?? null;
}

/** The ids of the tokenizer's special added tokens (those a decode with skipSpecialTokens drops). */
export function specialIdsOf(tokenizer: Tokenizer): Set<number> {
  const json = tokenizer.toJson().tokenizer as { added_tokens?: { id: number; special?: boolean }[] };
  return new Set((json.added_tokens ?? []).filter((a) => a.special).map((a) => a.id));
}

/** Whether `bytes` ends inside a UTF-8 character that more bytes could still complete. */
export function endsInPartialChar(bytes: ArrayLike<number>): boolean {
  const n = bytes.length;
  // Walk back over at most 3 continuation bytes to the lead byte of the last character.
  for (let k = 1; k <= Math.min(4, n); k++) {
    const b = bytes[n - k] as number;
    if ((b & 0xc0) === 0x80) continue; // a continuation byte
    // The length the lead byte announces (1 for ASCII and for bytes that never start a character).
    const need = b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 1;
    return need > k;
  }
  return false; // only continuation bytes: invalid, nothing will complete it
}

/**
 * Turns a growing list of tokens into text deltas. `push` returns the text that became complete
 * with that token ('' while a character is still partial); `flush` returns what is still held,
 * as the tokenizer decodes it (a partial character as U+FFFD), at the end of the generation. The
 * deltas concatenated equal the tokenizer's decode of all the tokens for byte-level tokenizers.
 */
export class IncrementalDetokenizer {
  readonly #tokens: number[] = [];
  readonly #decode: (ids: number[]) => string;
  readonly #bytes: TokenBytes;
  /** Special tokens the decode skips: they add no bytes. */
  readonly #skipped: ReadonlySet<number>;
  #prefix = 0; // start of the context window (already emitted)
  #read = 0; // end of what is emitted

  constructor(tokenizer: Tokenizer, o: { tokenBytes?: TokenBytes; skipSpecialTokens?: boolean } = {}) {
    const skip = o.skipSpecialTokens ?? true;
    this.#decode = (ids) => tokenizer.decode(ids, { skipSpecialTokens: skip });
    this.#bytes = o.tokenBytes ?? tokenBytesOf(tokenizer);
    this.#skipped = skip ? specialIdsOf(tokenizer) : new Set();
  }

  /** Every token pushed so far. */
  get tokens(): readonly number[] {
    return this.#tokens;
  }

  /** Adds one token; returns the text it completes. */
  push(token: number): string {
    this.#tokens.push(token);
    return this.#next(false);
  }

  /** The held text (an incomplete trailing character), as the decoder renders it. */
  flush(): string {
    return this.#next(true);
  }

  #next(final: boolean): string {
    const t = this.#tokens;
    if (this.#read === t.length) return '';
    const before = this.#prefix < this.#read ? this.#decode(t.slice(this.#prefix, this.#read)) : '';
    const now = this.#decode(t.slice(this.#prefix));
    if (!final && (now.length <= before.length || (now.endsWith('\uFFFD') && this.#partial()))) return '';
    this.#prefix = this.#read;
    this.#read = t.length;
    return now.slice(before.length);
  }

  /** Whether the pending tokens end inside a character (a U+FFFD that may still complete). */
  #partial(): boolean {
    const tail: number[] = [];
    for (let i = this.#tokens.length - 1; i >= this.#read && tail.length < 4; i--) {
      const id = this.#tokens[i] as number;
      if (this.#skipped.has(id)) continue;
      const b = this.#bytes(id);
      // Without byte information: hold while the window is short enough to be one character.
      if (b === null) return this.#tokens.length - this.#read < 4;
      tail.unshift(...b);
    }
    return endsInPartialChar(tail);
  }
}
