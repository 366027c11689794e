/**
 * The embedded model's tokenizer corpus: what its BPE tokenizer is trained on.
 */
import type { Trajectory } from '../agent/episode.js';
import { systemPrompt } from '../agent/scaffold.js';
import { diffLines, JS_WORD, type SweTask } from '../env/tasks.js';
import { type PipelineConfig, promptStyleOf } from '../pipeline/config.js';

/**
 * The embedded tokenizer's training text: the run's system prompt, the issues of the tasks
 * demonstrated, and every message of the demonstrations, less the words the tasks' bugs
 * introduced ({@link bugWords}). A demonstration repeats its bug's misspelled name four or five
 * times, so BPE would make each demonstrated misspelling a word of its own (`rates`), while a
 * held-out task's misspelling, never seen, splits into pieces (`offset` `s`): the model would
 * learn to copy and fix one-token names and meet multi-token ones. Without them a demonstrated
 * misspelling splits as a held-out one does, as a real tokenizer has not seen a repository's typos.
 */
export function tokenizerCorpus(c: PipelineConfig, tasks: SweTask[], demos: Trajectory[]): string[] {
  const typos = new Set(tasks.flatMap((t) => bugWords(t.patch)));
  const scrub = (text: string) => text.replace(JS_WORD, (w) => (typos.has(w) ? '' : w));
  return [
    systemPrompt(promptStyleOf(c)),
    ...tasks.map((t) => scrub(t.problem_statement)),
    ...demos.flatMap((d) => d.messages.map((m) => scrub(m.content))),
  ];
}

/**
 * The words a gold patch removes and does not write back: the names a bug introduced (a
 * misspelling's slip), none for a bug that only changes an operator or a number.
 */
export function bugWords(patch: string): string[] {
  const { added, removed } = diffLines(patch);
  const words = (lines: string[]) => new Set(lines.flatMap((l) => l.match(JS_WORD) ?? []));
  const restored = words(added);
  return [...words(removed)].filter((w) => !restored.has(w));
}
