/**
 * maskTimings: the test runners' wall-clock figures masked, the rest of the output kept. The
 * real check runs Node's test runner twice on a generated task in a sandbox: its raw outputs
 * differ (durations), the masked ones are equal, and an episode with maskTimings sees equal
 * observations for the same commands.
 */
import { describe, expect, it } from 'vitest';
import {
  generateMiniSweTasks,
  isolationAvailable,
  LocalSandbox,
  maskTimings,
  runEpisode,
  TIME_MASK,
} from '../../src/index.js';

const canSandbox = isolationAvailable('bwrap') || isolationAvailable('unshare');

describe('maskTimings', () => {
  it('masks the figures of the TAP and spec reporters and of pytest, and nothing else', () => {
    const tap = [
      'ok 1 - adds',
      '  ---',
      '  duration_ms: 2.180009',
      '  ...',
      '# pass 11',
      '# duration_ms 155.99018',
    ].join('\n');
    expect(maskTimings(tap)).toBe(
      ['ok 1 - adds', '  ---', `  duration_ms: ${TIME_MASK}`, '  ...', '# pass 11', `# duration_ms ${TIME_MASK}`].join(
        '\n',
      ),
    );
    expect(maskTimings('✔ adds (0.512ms)\nℹ duration_ms 12.5')).toBe(
      `✔ adds (${TIME_MASK})\nℹ duration_ms ${TIME_MASK}`,
    );
    expect(maskTimings('  ✓ parses (12ms)')).toBe(`  ✓ parses (${TIME_MASK})`);
    expect(maskTimings('==== 1 failed, 2 passed in 0.12s ====')).toBe(`==== 1 failed, 2 passed in ${TIME_MASK} ====`);
    expect(maskTimings('===== 3 passed in 61.02s (0:01:01) =====')).toBe(`===== 3 passed in ${TIME_MASK} =====`);
    // Numbers that are not a runner's timing stay: counts, line numbers, prose, code.
    const kept = [
      '# tests 13',
      'src/a.js:12:  return x + 1.5;',
      'it took about 3s in 0.5s steps',
      'setTimeout(fn, 100)',
      'duration_msx 5',
      '== in 0.1s',
    ].join('\n');
    expect(maskTimings(kept)).toBe(kept);
    expect(maskTimings('')).toBe('');
  });

  it.skipIf(!canSandbox)(
    "makes two runs of Node's test runner read the same, and an episode's observations with them",
    async () => {
      const [task] = await generateMiniSweTasks({ count: 1, seed: 3, kinds: ['misspelled-name'], issue: 'error' });
      if (!task) throw new Error('no task');
      const run = async () => {
        const sb = await LocalSandbox.create({ files: task.files });
        try {
          return (await sb.exec('node --test 2>&1 | tail -n 15')).output;
        } finally {
          await sb.close();
        }
      };
      const [a, b] = [await run(), await run()];
      expect(a).toMatch(/# duration_ms \d/);
      expect(a).not.toBe(b); // wall times (six decimals) never repeat
      expect(maskTimings(a)).toBe(maskTimings(b));
      expect(maskTimings(a)).toContain(`# duration_ms ${TIME_MASK}`);
      expect(maskTimings(a)).toMatch(/# fail [1-9]/); // the bug's failing test, still reported

      const episode = (maskTimings: boolean) => {
        const actions = ['node --test 2>&1 | tail -n 15', 'node --test 2>&1 | tail -n 15', 'submit'];
        let i = 0;
        return runEpisode({
          task,
          maskTimings,
          policy: async () => `run the tests\n\`\`\`command\n${actions[i++]}\n\`\`\``,
        });
      };
      const masked = await episode(true);
      expect(masked.turns[0]?.observation).toBe(masked.turns[1]?.observation);
      expect(masked.turns[0]?.observation).toContain(TIME_MASK);
      const raw = await episode(false);
      expect(raw.turns[0]?.observation).not.toBe(raw.turns[1]?.observation);
      expect(raw.turns[0]?.observation).not.toContain(TIME_MASK);
    },
    60_000,
  );
});
