/**
 * Byte-level BPE: training on a corpus, and encoding with the learned merges exactly as the
 * Hugging Face `tokenizers` BPE model does (repeatedly merge the adjacent pair of lowest rank,
 * the leftmost first), with a cache per pre-token.
 */
import { BYTE_TO_CHAR, byteLevelDecode, type PreTokenizer, preTokenize } from './byte-level.js';

/** A trained byte-level BPE: the vocabulary (symbol → id), the merges in rank order, its pre-tokenization. */
export interface BpeModel {
  vocab: Map<string, number>;
  merges: [string, string][];
  /** Default 'qwen2'. */
  split?: PreTokenizer;
}

/** Options of {@link trainBpe}. */
export interface BpeTrainOptions {
  /** Target vocabulary size, the 256 byte symbols included (special tokens come on top). */
  vocabSize: number;
  /** Pairs seen fewer times than this are never merged (default 2). */
  minFrequency?: number;
  /** Called every `progressEvery` merges with (merges so far, target). */
  onProgress?: (done: number, total: number) => void;
  /** The pre-tokenization (default 'qwen2'; byte-level.ts SPLIT_PATTERNS). */
  split?: PreTokenizer;
}

/**
 * Learns merges from texts: counts pre-tokens, then repeatedly merges the most frequent adjacent
 * pair (ties: the pair whose merged symbol sorts first), updating only the words that hold it.
 */
export function trainBpe(texts: Iterable<string>, o: BpeTrainOptions): BpeModel {
  const minFrequency = o.minFrequency ?? 2;
  const vocab = new Map<string, number>();
  const symbols: string[] = [];
  const idOf = (s: string): number => {
    let id = vocab.get(s);
    if (id === undefined) {
      id = symbols.length;
      vocab.set(s, id);
      symbols.push(s);
    }
    return id;
  };
  for (const c of BYTE_TO_CHAR) idOf(c);
  // Distinct pre-tokens with counts, as arrays of symbol ids.
  const counts = new Map<string, number>();
  const split = o.split ?? 'qwen2';
  for (const text of texts) for (const p of preTokenize(text, split)) counts.set(p, (counts.get(p) ?? 0) + 1);
  const words: number[][] = [];
  const freq: number[] = [];
  for (const [w, c] of counts) {
    words.push(Array.from(w, (ch) => idOf(ch)));
    freq.push(c);
  }
  const key = (a: number, b: number) => a * 0x100000 + b;
  const pairCount = new Map<number, number>();
  const pairWords = new Map<number, Set<number>>();
  const addPairs = (wi: number, sign: number) => {
    const w = words[wi] as number[];
    for (let i = 0; i + 1 < w.length; i++) {
      const k = key(w[i] as number, w[i + 1] as number);
      pairCount.set(k, (pairCount.get(k) ?? 0) + sign * (freq[wi] as number));
      if (sign > 0) {
        let s = pairWords.get(k);
        if (!s) {
          s = new Set();
          pairWords.set(k, s);
        }
        s.add(wi);
      }
    }
  };
  for (let wi = 0; wi < words.length; wi++) addPairs(wi, 1);
  const merges: [string, string][] = [];
  const target = o.vocabSize;
  while (symbols.length < target) {
    let best = -1;
    let bestCount = 0;
    let bestSymbol = '';
    for (const [k, c] of pairCount) {
      if (c < bestCount || c < minFrequency || c <= 0) continue;
      const s = (symbols[Math.floor(k / 0x100000)] as string) + (symbols[k % 0x100000] as string);
      if (c > bestCount || s < bestSymbol) {
        best = k;
        bestCount = c;
        bestSymbol = s;
      }
    }
    if (best < 0) break;
    const a = Math.floor(best / 0x100000);
    const b = best % 0x100000;
    merges.push([symbols[a] as string, symbols[b] as string]);
    const merged = idOf(bestSymbol);
    for (const wi of pairWords.get(best) ?? []) {
      const w = words[wi] as number[];
      addPairs(wi, -1);
      const out: number[] = [];
      for (let i = 0; i < w.length; i++) {
        if (i + 1 < w.length && w[i] === a && w[i + 1] === b) {
          out.push(merged);
          i++;
        } else out.push(w[i] as number);
      }
      words[wi] = out;
      addPairs(wi, 1);
    }
    pairWords.delete(best);
    pairCount.delete(best);
    if (o.onProgress && merges.length % 256 === 0) o.onProgress(symbols.length, target);
  }
  return { vocab, merges, split };
}

/** Encodes text with a byte-level BPE model, as Hugging Face tokenizers' BPE model does. */
export class BpeEncoder {
  readonly #vocab: Map<string, number>;
  readonly #ranks = new Map<string, number>();
  readonly #cache = new Map<string, number[]>();
  readonly #idToSymbol: string[] = [];
  readonly #split: PreTokenizer;

  constructor(model: BpeModel) {
    this.#vocab = model.vocab;
    this.#split = model.split ?? 'qwen2';
    model.merges.forEach(([a, b], r) => {
      this.#ranks.set(`${a} ${b}`, r);
    });
    for (const [s, id] of model.vocab) this.#idToSymbol[id] = s;
  }

  /** Token ids of `text` (no special tokens). */
  encode(text: string): number[] {
    const out: number[] = [];
    for (const p of preTokenize(text, this.#split)) {
      let ids = this.#cache.get(p);
      if (!ids) {
        ids = this.#bpe(p);
        if (this.#cache.size < 100_000) this.#cache.set(p, ids);
      }
      for (const id of ids) out.push(id);
    }
    return out;
  }

  /** The text of token ids (byte-level decoding). */
  decode(ids: ArrayLike<number>): string {
    let s = '';
    for (let i = 0; i < ids.length; i++) s += this.#idToSymbol[ids[i] as number] ?? '';
    return byteLevelDecode(s);
  }

  #bpe(word: string): number[] {
    let parts = Array.from(word);
    for (;;) {
      let bestRank = Number.POSITIVE_INFINITY;
      let at = -1;
      for (let i = 0; i + 1 < parts.length; i++) {
        const r = this.#ranks.get(`${parts[i]} ${parts[i + 1]}`);
        if (r !== undefined && r < bestRank) {
          bestRank = r;
          at = i;
        }
      }
      if (at < 0) break;
      const merged = (parts[at] as string) + (parts[at + 1] as string);
      // Merge every non-overlapping occurrence of this pair, left to right (same rank).
      const a = parts[at] as string;
      const b = parts[at + 1] as string;
      const next: string[] = [];
      for (let i = 0; i < parts.length; i++) {
        if (i + 1 < parts.length && parts[i] === a && parts[i + 1] === b) {
          next.push(merged);
          i++;
        } else next.push(parts[i] as string);
      }
      parts = next;
    }
    return parts.map((s) => this.#vocab.get(s) as number);
  }
}
