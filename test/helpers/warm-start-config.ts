/**
 * A small warm-start config for tests: the smoke preset with misspelled-name tasks whose issue is
 * the error, a 1-layer model, 2 direct demonstrations with fresh names and no copy pretraining,
 * 2 epochs in batches of 2, with `warmStart` keys over these.
 */
import { resolveConfig } from '../../src/pipeline/config.js';

/** The task settings of the default's slips (also for generateMiniSweTasks). */
export const SLIP_TASKS = { difficulty: 0, kinds: ['misspelled-name'], renameLocals: true, issue: 'error' as const };

/** The smoke preset's tasks and a small model, with `warmStart` over a short warm start (seed 3). */
export function smallWarmStartConfig(warmStart: Record<string, unknown>) {
  return resolveConfig(
    {
      seed: 3,
      miniSwe: { trainTasks: 3, testTasks: 1, ...SLIP_TASKS },
      embeddedModel: { hiddenSize: 32, layers: 1, heads: 2, kvHeads: 1, intermediateSize: 64 },
      tokenizer: { vocabSize: 400 },
      warmStart: {
        demos: 2,
        style: 'direct',
        noise: 0,
        freshNames: true,
        copySteps: 0,
        epochs: 2,
        batchSize: 2,
        ...warmStart,
      },
    },
    'smoke',
  );
}
