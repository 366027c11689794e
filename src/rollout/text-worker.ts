/**
 * The rollout coordinator's text worker (piscina; see text-pool.ts): the text work around the
 * model (text-work.ts) on a worker thread, so that the main thread, which feeds the engine and
 * drives the sandboxes, is not held up by it. It holds the run's tokenizer, made from workerData
 * once per thread.
 */
import { workerData } from 'node:worker_threads';
import { Tokenizer } from '../tokenizer/tokenizer.js';
import { runTextJob, type TextJob, type TextResults } from './text-work.js';

const { tokenizer: json, config } = workerData as { tokenizer: object; config: object };
const tokenizer = Tokenizer.fromJson(json, config);

/** Runs one job (piscina's entry point). */
export default function run(job: TextJob): TextResults[TextJob['op']] {
  return runTextJob(tokenizer, job);
}
