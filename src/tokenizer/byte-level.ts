/**
 * Byte-level BPE's pre-tokenization, as GPT-2 and Qwen2 define it: split text with Qwen2's
 * pattern, then map each UTF-8 byte to a printable character (GPT-2's bytes_to_unicode), so
 * every string is covered by 256 base symbols.
 */

/** Qwen2's split pattern with `contractions` and `word` (the letter-run alternative) filled in. */
function qwen2Like(contractions: string, word: string): string {
  return `${contractions}|${word}|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
}
/** The contractions, case-insensitive: spelled out for JavaScript, `(?i:...)` for Oniguruma. */
const CONTRACTIONS_JS = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
const CONTRACTIONS_ONIG = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
/** Qwen2's word: one space or punctuation character may lead a run of letters. */
const QWEN2_WORD = '[^\\r\\n\\p{L}\\p{N}]?\\p{L}+';
/** The 'identifiers' word: a run of letters alone. */
const IDENTIFIER_WORD = '\\p{L}+';
/**
 * The 'stems' word: a run of letters alone, its final `s` cut off as a word of its own when at
 * least two letters come before it and the last of them is not `s`, `i` or `u` (the lazy run
 * stops before an `s` that ends the run; the `s` then matches alone). So `offsets` → `offset`
 * `s` and `pos` → `po` `s`, while `is`, `js`, `pass`, `this` and `status` stay whole.
 */
const STEM_WORD = '\\p{L}{2,}?(?<![siu])(?=s(?!\\p{L}))|\\p{L}+';

/** Qwen2's split pattern (tokenizer.json's Split pre-tokenizer), written for JavaScript. */
export const QWEN2_SPLIT_PATTERN = qwen2Like(CONTRACTIONS_JS, QWEN2_WORD);

/** The same pattern as tokenizer.json stores it (Oniguruma syntax, as Qwen2 ships it). */
export const QWEN2_SPLIT_PATTERN_ONIG = qwen2Like(CONTRACTIONS_ONIG, QWEN2_WORD);

/**
 * The pre-tokenizations Tokenizer.train offers. 'qwen2' is Qwen2's. 'identifiers' is the same
 * except that a run of letters never takes the character before it (Qwen2 lets one space or
 * punctuation character lead a word): a name is then the same tokens wherever it appears, in
 * prose, after a space, in quotes, backticks or a sed pattern, so a model trained from scratch
 * can copy a name it has not seen, token by token, from an issue into a command (with Qwen2's
 * split `` `total`` and `"total` and ` total` are unrelated tokens). Its cost is the space before
 * a word, now a token of its own: a direct-style demonstration grew from 453 to 602 tokens.
 * 'stems' is 'identifiers' with a run's final `s` a pre-token of its own (`offsets` → `offset`,
 * `s`): a name and its plural then share their tokens, so that a plural slip (`offsets` for
 * `offset`) is a copy less or more one token, for names the model has never seen, where whole-word
 * merges make `offsets` and `offset` unrelated tokens. Short words and words ending in `ss`, `is`
 * or `us` stay whole (`is`, `js`, `pass`, `this`, `status`).
 */
export const SPLIT_PATTERNS = {
  qwen2: { js: QWEN2_SPLIT_PATTERN, onig: QWEN2_SPLIT_PATTERN_ONIG },
  identifiers: {
    js: qwen2Like(CONTRACTIONS_JS, IDENTIFIER_WORD),
    onig: qwen2Like(CONTRACTIONS_ONIG, IDENTIFIER_WORD),
  },
  stems: {
    js: qwen2Like(CONTRACTIONS_JS, STEM_WORD),
    onig: qwen2Like(CONTRACTIONS_ONIG, STEM_WORD),
  },
} as const;

/** A pre-tokenization's name (SPLIT_PATTERNS). */
export type PreTokenizer = keyof typeof SPLIT_PATTERNS;

const SPLITS: Record<PreTokenizer, RegExp> = {
  qwen2: new RegExp(SPLIT_PATTERNS.qwen2.js, 'gu'),
  identifiers: new RegExp(SPLIT_PATTERNS.identifiers.js, 'gu'),
  stems: new RegExp(SPLIT_PATTERNS.stems.js, 'gu'),
};

/** The pre-tokenization whose tokenizer.json (Oniguruma) pattern is `onig`, or null. */
export function preTokenizerOf(onig: unknown): PreTokenizer | null {
  for (const [name, p] of Object.entries(SPLIT_PATTERNS)) if (p.onig === onig) return name as PreTokenizer;
  return null;
}

/** GPT-2's byte → character table: printable bytes map to themselves, the rest to 256 + n. */
export const BYTE_TO_CHAR: string[] = (() => {
  const keep: number[] = [];
  for (let b = 33; b <= 126; b++) keep.push(b);
  for (let b = 161; b <= 172; b++) keep.push(b);
  for (let b = 174; b <= 255; b++) keep.push(b);
  const out: string[] = new Array(256);
  let n = 0;
  for (let b = 0; b < 256; b++) out[b] = String.fromCodePoint(keep.includes(b) ? b : 256 + n++);
  return out;
})();

/** The inverse of BYTE_TO_CHAR. */
export const CHAR_TO_BYTE: Map<string, number> = new Map(BYTE_TO_CHAR.map((c, b) => [c, b]));

const encoder = new TextEncoder();

/** The pre-tokens of `text`, each as its byte-level string. */
export function preTokenize(text: string, split: PreTokenizer = 'qwen2'): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(SPLITS[split])) {
    let s = '';
    for (const b of encoder.encode(m[0])) s += BYTE_TO_CHAR[b];
    out.push(s);
  }
  return out;
}

/** Decodes byte-level symbols back to text (invalid UTF-8 becomes U+FFFD, as HF's decoder does). */
export function byteLevelDecode(symbols: string): string {
  const bytes: number[] = [];
  for (const ch of symbols) {
    const b = CHAR_TO_BYTE.get(ch);
    if (b !== undefined) bytes.push(b);
  }
  return new TextDecoder().decode(Uint8Array.from(bytes));
}
