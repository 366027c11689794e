/**
 * TextPool: the rollout coordinator's text work (ChatML rendering, tokenizing, decoding, action
 * parsing; text-work.ts) on a piscina pool of worker threads, one pool per tokenizer, kept for
 * the tokenizer's life. Its results are the ones the same functions give on the main thread.
 */
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { compiledScript } from '../compiled-script.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import type { TextJob, TextResults } from './text-work.js';

const pools = new WeakMap<Tokenizer, TextPool>();

/** The text work of episodes on worker threads that hold a copy of one tokenizer. */
export class TextPool {
  readonly #pool: Piscina;

  private constructor(tokenizer: Tokenizer) {
    this.#pool = new Piscina({
      filename: compiledScript(import.meta.url, 'text-worker.js'),
      workerData: tokenizer.toJson(),
      // The text work of 32 episodes is a small fraction of a core: one thread on 2 cores, where
      // the engine's kernels and the sandboxes' commands need the rest. An idle pool keeps no
      // thread, so a pool whose tokenizer is gone holds nothing.
      minThreads: 0,
      maxThreads: Math.max(1, Math.min(4, availableParallelism() - 1)),
      idleTimeout: 5_000,
    });
  }

  /** The pool for `tokenizer` (made on first use). */
  static for(tokenizer: Tokenizer): TextPool {
    let p = pools.get(tokenizer);
    if (!p) {
      p = new TextPool(tokenizer);
      pools.set(tokenizer, p);
    }
    return p;
  }

  /** Runs one text job (text-work.ts) on a worker thread. */
  run<K extends TextJob['op']>(job: TextJob & { op: K }): Promise<TextResults[K]> {
    return this.#pool.run(job) as Promise<TextResults[K]>;
  }
}
