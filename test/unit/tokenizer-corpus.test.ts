/**
 * The embedded tokenizer's corpus: the words a task's bug introduced (a misspelled name) are left
 * out, so that BPE does not learn a demonstrated misspelling as a word of its own and a
 * demonstrated slip splits into pieces as a held-out one does.
 */
import { describe, expect, it } from 'vitest';
import { bugWords, resolveConfig, Tokenizer, tokenizerCorpus } from '../../src/index.js';

const patch = (minus: string, plus: string) =>
  `diff --git a/src/a.js b/src/a.js\n--- a/src/a.js\n+++ b/src/a.js\n@@ -3,1 +3,1 @@\n-${minus}\n+${plus}\n`;

describe('tokenizerCorpus', () => {
  it('bugWords: the words a patch removes and does not write back', () => {
    expect(bugWords(patch('  const list = (page - 1) * rates;', '  const list = (page - 1) * rate;'))).toEqual([
      'rates',
    ]);
    expect(bugWords(patch('  return a < b;', '  return a <= b;'))).toEqual([]);
    expect(bugWords('')).toEqual([]);
  });

  it('leaves the demonstrated misspellings out, so they split into pieces as unseen ones do', () => {
    const task = {
      instance_id: 't',
      problem_statement: 'ReferenceError: rates is not defined',
      patch: patch('  return rates * 2;', '  return rate * 2;'),
    };
    const say = (text: string) => ({ role: 'assistant' as const, content: text });
    const messages = [
      { role: 'user' as const, content: task.problem_statement },
      ...Array.from({ length: 40 }, () => [
        say('The error says `rates` is not defined.\n```command\ngrep -rn "rates" src\n```'),
        say("`rates` should be `rate`.\n```command\nsed -i 's/\\<rates\\>/rate/' src/a.js\n```"),
      ]).flat(),
    ];
    const demo = { instance_id: 't', messages, turns: [], patch: '', finishReason: 'submit' as const };
    const c = resolveConfig({});
    const corpus = tokenizerCorpus(c, [task as never], [demo]);
    expect(corpus.join('\n')).not.toMatch(/\brates\b/);
    expect(corpus.join('\n')).toMatch(/\brate\b/);
    const scrubbed = Tokenizer.train(corpus, { vocabSize: 600, split: 'identifiers' });
    const raw = Tokenizer.train(
      messages.map((m) => m.content),
      { vocabSize: 600, split: 'identifiers' },
    );
    expect(raw.encode('rates')).toHaveLength(1); // learnt as a word
    const pieces = Array.from(scrubbed.encode('rates'), (id) => scrubbed.decode(Int32Array.of(id)));
    expect(pieces).toEqual(['rate', 's']); // the right name and an s
  });
});
