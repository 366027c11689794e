/**
 * resolveConfig's refusals name the field and what it may be: an unknown top-level key lists the
 * sections as well as the scalar fields, and checkpoints.keep takes one of its three values.
 */
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/index.js';

describe('resolveConfig', () => {
  it('an unknown top-level key lists every valid key, sections included', () => {
    let message = '';
    try {
      resolveConfig({ dapoo: { lr: 1 } }, 'smoke');
    } catch (e) {
      expect(e).toMatchObject({ code: 'INVALID_CONFIG' });
      message = (e as Error).message;
    }
    expect(message).toMatch(/^config field dapoo must be one of /);
    for (const k of ['seed', 'modelDir', 'miniSwe', 'warmStart', 'eval', 'rft', 'dapo', 'checkpoints'])
      expect(message).toContain(k);
    expect(message).toContain('docs/training.md');
  });

  it("checkpoints.keep is 'stages' by default and one of stages, all, last", () => {
    expect(resolveConfig({}, 'smoke').checkpoints.keep).toBe('stages');
    expect(resolveConfig({ checkpoints: { keep: 'all' } }, 'default').checkpoints.keep).toBe('all');
    expect(() => resolveConfig({ checkpoints: { keep: 'some' } }, 'smoke')).toThrow(
      /checkpoints\.keep must be 'stages' \| 'all' \| 'last'/,
    );
    expect(() => resolveConfig({ checkpoints: { kept: 'all' } }, 'smoke')).toThrow(/checkpoints\.kept/);
    expect(() => resolveConfig({ checkpoints: 'all' }, 'smoke')).toThrow(/checkpoints must be an object/);
  });
});
