/**
 * Tokenizers and chat templates (DESIGN.md section 4): Hugging Face tokenizer.json through
 * @huggingface/tokenizers, tokenizer_config.json's chat_template through @huggingface/jinja, and
 * byte-level BPE tokenizers trained here for the embedded model (encoded by swerl's own BPE,
 * which @huggingface/tokenizers matches token for token on the saved tokenizer.json).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Template } from '@huggingface/jinja';
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { invalidArgument, SwerlError } from '../errors.js';
import { BpeEncoder, type BpeModel, trainBpe } from './bpe.js';
import { type PreTokenizer, preTokenizerOf, SPLIT_PATTERNS } from './byte-level.js';

/** One chat message, as chat templates take them. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool' | string;
  content: string;
  [key: string]: unknown;
}

/** Qwen's ChatML, without tools: what trained tokenizers get unless told otherwise. */
export const CHATML_TEMPLATE =
  "{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

/** ChatML's special tokens, in id order after the BPE vocabulary (as Qwen2 numbers them). */
export const CHATML_SPECIAL_TOKENS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'];

type Json = Record<string, unknown>;

/**
 * A message as {@link Tokenizer.encodeChat} takes it: a {@link ChatMessage} whose content may also
 * be null or absent (an assistant turn with only tool_calls) or an array of parts
 * (`{ type: 'text', text }` among them).
 */
export interface ChatInputMessage {
  role: string;
  content?: unknown;
  [key: string]: unknown;
}

/** A tokenizer with its chat template. */
export class Tokenizer {
  readonly #hf: HfTokenizer;
  readonly #json: Json;
  readonly #config: Json;
  readonly #template: Template | null;
  readonly #fast: {
    bpe: BpeEncoder;
    specials: Map<string, number>;
    /** Splits at every added token. */
    split: RegExp | null;
    /** Splits at the added tokens that are not special (those `specials: false` still matches). */
    splitPlain: RegExp | null;
  } | null;
  /** @huggingface/tokenizers without the special added tokens, for `specials: false` (made when first used). */
  #hfPlain: HfTokenizer | null = null;
  /** The special added tokens, for {@link Tokenizer.encodeChat} (made when first used). */
  #specialTokens: { split: RegExp | null; tokens: Map<string, AddedToken> } | null = null;

  private constructor(json: Json, config: Json, fast: BpeModel | null) {
    this.#json = json;
    this.#config = config;
    try {
      this.#hf = new HfTokenizer(json, config);
    } catch (e) {
      throw new SwerlError(`tokenizer.json could not be loaded: ${(e as Error).message}`, 'CORRUPT_FILE');
    }
    const t = config.chat_template;
    this.#template = typeof t === 'string' ? new Template(t) : null;
    this.#fast = null;
    if (fast) {
      const specials = new Map<string, number>();
      const added = (json.added_tokens as AddedToken[]) ?? [];
      for (const a of added) specials.set(a.content, a.id);
      this.#fast = {
        bpe: new BpeEncoder(fast),
        specials,
        split: alternation(added.map((a) => a.content)),
        splitPlain: alternation(added.filter((a) => a.special !== true).map((a) => a.content)),
      };
    }
  }

  /** Loads tokenizer.json and tokenizer_config.json from `dir` (IO_ERROR, CORRUPT_FILE). */
  static async load(dir: string): Promise<Tokenizer> {
    const json = await readJson(join(dir, 'tokenizer.json'), true);
    const config = (await readJson(join(dir, 'tokenizer_config.json'), false)) ?? {};
    return new Tokenizer(json, config, swerlBpe(json));
  }

  /** A tokenizer from the parsed contents of tokenizer.json and tokenizer_config.json. */
  static fromJson(tokenizerJson: object, tokenizerConfig: object = {}): Tokenizer {
    return new Tokenizer(tokenizerJson as Json, tokenizerConfig as Json, swerlBpe(tokenizerJson as Json));
  }

  /**
   * Trains a byte-level BPE tokenizer on `texts`, with ChatML special tokens and chat template by
   * default. `split` is the pre-tokenization: 'qwen2' (the default), 'identifiers' (letter runs
   * stand alone, so a name tokenizes the same in every context) or 'stems' (also a run's final `s`
   * alone, so a name and its plural share tokens); byte-level.ts SPLIT_PATTERNS.
   * The tokenizer.json written is a standard one either way (a Split pre-tokenizer with the
   * pattern), which Hugging Face tokenizers load.
   */
  static train(
    texts: Iterable<string>,
    o: {
      vocabSize: number;
      specialTokens?: string[];
      chatTemplate?: string;
      eosToken?: string;
      minFrequency?: number;
      onProgress?: (done: number, total: number) => void;
      split?: PreTokenizer;
    },
  ): Tokenizer {
    if (!Number.isInteger(o.vocabSize) || o.vocabSize < 256)
      throw invalidArgument('vocabSize', 'an integer >= 256 (the byte symbols)', o.vocabSize);
    const split = o.split ?? 'qwen2';
    if (!Object.hasOwn(SPLIT_PATTERNS, split))
      throw invalidArgument('split', `one of ${Object.keys(SPLIT_PATTERNS).join(', ')}`, split);
    const model = trainBpe(texts, { ...o, split });
    const specials = o.specialTokens ?? CHATML_SPECIAL_TOKENS;
    const base = model.vocab.size;
    const added = specials.map((content, i) => ({
      id: base + i,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    }));
    const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };
    const json: Json = {
      version: '1.0',
      truncation: null,
      padding: null,
      added_tokens: added,
      normalizer: null,
      pre_tokenizer: {
        type: 'Sequence',
        pretokenizers: [
          { type: 'Split', pattern: { Regex: SPLIT_PATTERNS[split].onig }, behavior: 'Isolated', invert: false },
          byteLevel,
        ],
      },
      post_processor: byteLevel,
      decoder: byteLevel,
      model: {
        type: 'BPE',
        dropout: null,
        unk_token: null,
        continuing_subword_prefix: null,
        end_of_word_suffix: null,
        fuse_unk: false,
        byte_fallback: false,
        ignore_merges: false,
        vocab: Object.fromEntries(model.vocab),
        merges: model.merges,
      },
    };
    const eos = o.eosToken ?? (specials.includes('<|im_end|>') ? '<|im_end|>' : (specials[0] ?? null));
    const config: Json = {
      tokenizer_class: 'Qwen2Tokenizer',
      add_prefix_space: false,
      bos_token: null,
      eos_token: eos,
      pad_token: specials.includes('<|endoftext|>') ? '<|endoftext|>' : eos,
      unk_token: null,
      clean_up_tokenization_spaces: false,
      errors: 'replace',
      split_special_tokens: false,
      model_max_length: 131072,
      added_tokens_decoder: Object.fromEntries(added.map((a) => [String(a.id), { ...a, id: undefined }])),
      chat_template: o.chatTemplate ?? CHATML_TEMPLATE,
    };
    return new Tokenizer(json, config, model);
  }

  /** Vocabulary size including added tokens (the model's vocab_size must be at least this). */
  get vocabSize(): number {
    const model = this.#json.model as { vocab?: Record<string, number> };
    let max = -1;
    for (const id of Object.values(model.vocab ?? {})) max = Math.max(max, id);
    for (const a of (this.#json.added_tokens as { id: number }[]) ?? []) max = Math.max(max, a.id);
    return max + 1;
  }

  /** The id of a token string (special tokens included), or undefined. */
  tokenToId(token: string): number | undefined {
    return this.#hf.token_to_id(token);
  }

  /** The end-of-sequence token id of tokenizer_config.json, when it names one. */
  get eosTokenId(): number | undefined {
    const eos = this.#config.eos_token;
    const s = typeof eos === 'string' ? eos : (eos as { content?: string } | null)?.content;
    return s === undefined ? undefined : this.tokenToId(s);
  }

  /**
   * Token ids of `text`. By default special tokens written in the text map to their ids (as a
   * chat template's rendering needs). With `specials: false` a special token's string is plain
   * text (Hugging Face's `split_special_tokens`): for content that is not the template's own,
   * an issue, an observation or a response, whose literal `<|im_end|>` must not end a turn.
   * Added tokens that are not special still map to their ids either way.
   */
  encode(text: string, o: { specials?: boolean } = {}): Int32Array {
    if (typeof text !== 'string') throw invalidArgument('text', 'a string', text);
    const specials = o.specials ?? true;
    if (typeof specials !== 'boolean') throw invalidArgument('specials', 'a boolean', specials);
    const f = this.#fast;
    if (!f) {
      const hf = specials ? this.#hf : this.#plainHf();
      return Int32Array.from(hf.encode(text, { add_special_tokens: false }).ids);
    }
    const out: number[] = [];
    const split = specials ? f.split : f.splitPlain;
    const parts = split ? text.split(split) : [text];
    // split's capture group puts the matched added tokens at the odd indices.
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i] as string;
      if (p === '') continue;
      const id = i % 2 === 1 ? f.specials.get(p) : undefined;
      if (id !== undefined) out.push(id);
      else for (const t of f.bpe.encode(p)) out.push(t);
    }
    return Int32Array.from(out);
  }

  /** @huggingface/tokenizers over tokenizer.json less its special added tokens. */
  #plainHf(): HfTokenizer {
    if (this.#hfPlain === null) {
      const added = ((this.#json.added_tokens as AddedToken[]) ?? []).filter((a) => a.special !== true);
      this.#hfPlain = new HfTokenizer({ ...this.#json, added_tokens: added }, this.#config);
    }
    return this.#hfPlain;
  }

  /** The text of token ids. */
  decode(ids: ArrayLike<number>, o: { skipSpecialTokens?: boolean } = {}): string {
    if (ids.length === 0) return '';
    return this.#hf.decode(Array.from(ids), { skip_special_tokens: o.skipSpecialTokens ?? false });
  }

  /** Renders messages with tokenizer_config.json's chat template. */
  applyChatTemplate(messages: ChatMessage[], o: { addGenerationPrompt?: boolean; tools?: unknown[] } = {}): string {
    if (!this.#template) {
      throw new SwerlError('this tokenizer has no chat_template in tokenizer_config.json', 'INVALID_ARGUMENT');
    }
    const token = (v: unknown) => (typeof v === 'string' ? v : ((v as { content?: string } | null)?.content ?? ''));
    return this.#template.render({
      messages,
      add_generation_prompt: o.addGenerationPrompt ?? false,
      tools: o.tools,
      bos_token: token(this.#config.bos_token),
      eos_token: token(this.#config.eos_token),
    });
  }

  /**
   * The token ids of a chat, as the model must see it: the chat template's own text with its
   * special tokens, each message's content as plain text (`encode(content, { specials: false })`),
   * so that content spelling `<|im_end|>` or `<|im_start|>system` adds no turn boundary.
   *
   * The template is rendered with each non-empty string content (and each non-empty text part's
   * `text`) replaced by a sentinel unique to the call; the rendering is cut at the sentinels and
   * at the template's special tokens, and the text between two special tokens (template text and
   * contents together) is encoded as one plain text. Content without special token strings
   * therefore gives exactly `encode(applyChatTemplate(messages, o))`, merges across a
   * template/content boundary included. That holds for byte-level BPE tokenizers (Qwen's, and
   * those {@link Tokenizer.train} writes); a pre-tokenizer that depends on where a piece starts
   * in the text (a Metaspace with `prepend_scheme: 'first'`) may differ just after a special token.
   *
   * A sentinel the template drops drops its content; one it repeats is substituted each time.
   * Empty contents stay empty (so `{% if message.content %}` still tests them), null or absent
   * ones as they are. The limit: a template that inspects or transforms content (`| trim`,
   * `| tojson`, `.split('</think>')`, `startswith`) sees the sentinel, not the content, so such a
   * branch goes the sentinel's way and the content is inserted untransformed. A template that breaks a sentinel apart (slicing or
   * case-changing content) makes the call fall back to `encode(applyChatTemplate(messages, o))`,
   * which is refused (INVALID_ARGUMENT) when a content spells a special token. Only content is
   * protected: tool definitions, tool-call arguments and names are template text.
   */
  encodeChat(
    messages: readonly ChatInputMessage[],
    o: { addGenerationPrompt?: boolean; tools?: unknown[] } = {},
  ): Int32Array {
    if (!Array.isArray(messages)) throw invalidArgument('messages', 'an array of chat messages', messages);
    const nonce = randomBytes(12).toString('hex');
    const contents: string[] = [];
    const sentinel = (text: string) => {
      contents.push(text);
      return `\uE000${nonce}:${contents.length - 1}\uE001`;
    };
    const masked = messages.map((m) => {
      const c = m?.content;
      if (typeof c === 'string') return c === '' ? m : { ...m, content: sentinel(c) };
      if (!Array.isArray(c)) return m;
      const parts = c.map((p) => {
        const part = p as Json | null;
        return part?.type === 'text' && typeof part.text === 'string' && part.text !== ''
          ? { ...part, text: sentinel(part.text) }
          : p;
      });
      return { ...m, content: parts };
    });
    const rendered = this.applyChatTemplate(masked as ChatMessage[], o);
    // The odd indices hold the content numbers.
    const cut = rendered.split(new RegExp(`\uE000${nonce}:(\\d+)\uE001`));
    const broken = cut.some((s, i) => i % 2 === 0 && (/[\uE000\uE001]/.test(s) || s.toLowerCase().includes(nonce)));
    if (broken) {
      const text = this.applyChatTemplate(messages as ChatMessage[], o);
      const specials = this.#chatSpecials().split;
      if (specials && contents.some((c) => specials.test(c)))
        throw new SwerlError(
          'the chat template alters message content, so content that spells a special token cannot be kept plain text',
          'INVALID_ARGUMENT',
        );
      return this.encode(text);
    }
    const { split, tokens } = this.#chatSpecials();
    // Runs of plain text between the template's special tokens.
    const pieces: (string | AddedToken)[] = [];
    let run = '';
    for (let i = 0; i < cut.length; i++) {
      const s = cut[i] as string;
      if (i % 2 === 1) {
        run += contents[Number(s)] as string;
        continue;
      }
      const parts = split ? s.split(split) : [s];
      for (let j = 0; j < parts.length; j++) {
        const p = parts[j] as string;
        if (j % 2 === 0) run += p;
        else {
          pieces.push(run, tokens.get(p) as AddedToken);
          run = '';
        }
      }
    }
    pieces.push(run);
    const out: number[] = [];
    for (let i = 0; i < pieces.length; i++) {
      const p = pieces[i] as string | AddedToken;
      if (typeof p !== 'string') {
        out.push(p.id);
        continue;
      }
      let text = p;
      // Hugging Face's lstrip / rstrip: a special token takes the whitespace beside it (swerl's BPE ignores them).
      if (!this.#fast) {
        const before = pieces[i - 1] as AddedToken | undefined;
        const after = pieces[i + 1] as AddedToken | undefined;
        if (before?.rstrip) text = text.trimStart();
        if (after?.lstrip) text = text.trimEnd();
      }
      if (text !== '') for (const id of this.encode(text, { specials: false })) out.push(id);
    }
    return Int32Array.from(out);
  }

  /** The special added tokens (those `specials: false` leaves as text) and a regex that splits at them. */
  #chatSpecials(): { split: RegExp | null; tokens: Map<string, AddedToken> } {
    if (this.#specialTokens === null) {
      const special = ((this.#json.added_tokens as AddedToken[]) ?? []).filter((a) => a.special === true);
      this.#specialTokens = {
        split: alternation(special.map((a) => a.content)),
        tokens: new Map(special.map((a) => [a.content, a])),
      };
    }
    return this.#specialTokens;
  }

  /**
   * The parsed contents of tokenizer.json and tokenizer_config.json, as {@link Tokenizer.fromJson}
   * takes them (to make the same tokenizer on a worker thread).
   */
  toJson(): { tokenizer: object; config: object } {
    return { tokenizer: this.#json, config: this.#config };
  }

  /** Writes tokenizer.json and tokenizer_config.json into `dir`. */
  async save(dir: string): Promise<void> {
    try {
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, 'tokenizer.json'), JSON.stringify(this.#json));
      await writeFile(join(dir, 'tokenizer_config.json'), `${JSON.stringify(this.#config, null, 2)}\n`);
    } catch (e) {
      throw new SwerlError(`cannot write the tokenizer into ${dir}: ${(e as Error).message}`, 'IO_ERROR');
    }
  }
}

/** An entry of tokenizer.json's added_tokens. */
interface AddedToken {
  id: number;
  content: string;
  special?: boolean;
  lstrip?: boolean;
  rstrip?: boolean;
}

/** A regex whose one capture group matches any of `tokens` (longest first), or null for none. */
function alternation(tokens: string[]): RegExp | null {
  if (tokens.length === 0) return null;
  const escaped = [...tokens].sort((a, b) => b.length - a.length).map((t) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`(${escaped.join('|')})`);
}

/** The BPE model of a tokenizer.json laid out exactly as Tokenizer.train writes it, else null. */
function swerlBpe(json: Json): BpeModel | null {
  const m = json.model as { type?: string; vocab?: Record<string, number>; merges?: unknown[] } | undefined;
  const pre = json.pre_tokenizer as {
    type?: string;
    pretokenizers?: { type?: string; pattern?: { Regex?: string } }[];
  };
  const split = preTokenizerOf(pre?.pretokenizers?.[0]?.pattern?.Regex);
  const ours =
    m?.type === 'BPE' &&
    json.normalizer === null &&
    pre?.type === 'Sequence' &&
    pre.pretokenizers?.length === 2 &&
    pre.pretokenizers[1]?.type === 'ByteLevel' &&
    Array.isArray(m.merges) &&
    m.merges.every((x) => Array.isArray(x) && x.length === 2);
  if (!ours || !m?.vocab || split === null) return null;
  return { vocab: new Map(Object.entries(m.vocab)), merges: m.merges as [string, string][], split };
}

async function readJson(path: string, required: true): Promise<Json>;
async function readJson(path: string, required: false): Promise<Json | null>;
async function readJson(path: string, required: boolean): Promise<Json | null> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    if (!required) return null;
    throw new SwerlError(`cannot read ${path}: ${(e as Error).message}`, 'IO_ERROR');
  }
  try {
    return JSON.parse(text) as Json;
  } catch (e) {
    throw new SwerlError(`${path} is not valid JSON: ${(e as Error).message}`, 'CORRUPT_FILE');
  }
}
