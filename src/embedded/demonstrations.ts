/**
 * The embedded model's warm-start data: the scripted expert's demonstrations on training tasks,
 * some of them recorded as another scaffold would have written them (warmStart.foreignFormat),
 * and a demonstration as a training sample.
 */
import { runEpisode, type Trajectory } from '../agent/episode.js';
import { expertPolicy } from '../env/mini-swe/expert.js';
import type { SweTask } from '../env/tasks.js';
import { type PipelineConfig, promptStyleOf } from '../pipeline/config.js';
import { type StageHooks, shuffled } from '../pipeline/stages.js';
import { conversationTokens } from '../rollout/chatml.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import type { TrainSample } from '../train/trainer.js';

/** The scripted expert's trajectories on `tasks` (for the warm start), `concurrency` at a time. */
export async function expertDemos(tasks: SweTask[], c: PipelineConfig, hooks: StageHooks): Promise<Trajectory[]> {
  const out: Trajectory[] = new Array(tasks.length);
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const i = next++;
      const task = tasks[i] as SweTask;
      out[i] = await runEpisode({
        task,
        policy: expertPolicy(task, { noise: c.warmStart.noise, seed: c.seed * 1000 + i, style: c.warmStart.style }),
        maxTurns: 40,
        prompt: promptStyleOf(c),
        maxObservationChars: c.episode.maxObservationChars,
        commandTimeoutMs: c.episode.commandTimeoutMs,
        maskTimings: c.episode.maskTimings,
      });
      hooks.progress?.('demonstrations', ++done, tasks.length, 'episode');
    }
  };
  await Promise.all(Array.from({ length: Math.min(4, tasks.length) }, worker));
  const foreign = Math.round(c.warmStart.foreignFormat * out.length);
  for (const i of shuffled([...out.keys()], c.seed * 7919 + 3).slice(0, foreign))
    out[i] = inForeignFormat(out[i] as Trajectory);
  return out;
}

/**
 * A trajectory as another scaffold would have recorded it: every command in a ```bash fence
 * instead of ```command (mini-SWE-agent's format), the observations unchanged. In this scaffold
 * such a response is a format error ('cannot extract command'); as warm-start data it gives the
 * model a prior that writes the wrong format some of the time (warmStart.foreignFormat).
 */
export function inForeignFormat(t: Trajectory): Trajectory {
  return {
    ...t,
    messages: t.messages.map((m) =>
      m.role === 'assistant' ? { ...m, content: m.content.replaceAll('```command\n', '```bash\n') } : m,
    ),
  };
}

/** A trajectory as a training sample: every response trained except format errors. */
export function demoSample(t: Trajectory, tokenizer: Tokenizer): TrainSample {
  return conversationTokens(t.messages, tokenizer, (turn) => t.turns[turn]?.formatError == null);
}
