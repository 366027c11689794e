// Without a GPU, every CUDA entry says so with CUDA_UNAVAILABLE and changes nothing: device
// tensors, the KV cache on device 'cuda'. (On a machine with a device, the same calls work.)
import { describe, expect, it } from 'vitest';
import { DeviceTensor, nativeInfo, PagedKvCache } from '../../src/index.js';
import { expectSwerlError } from '../helpers/errors.js';

const info = nativeInfo();

describe('CUDA entries', () => {
  it.skipIf(info.cudaDevices > 0)('throw CUDA_UNAVAILABLE where there is no device', () => {
    const e = expectSwerlError(() => DeviceTensor.zeros([4]), 'CUDA_UNAVAILABLE');
    expect(e.message).toMatch(/CUDA/);
    expectSwerlError(() => DeviceTensor.from(new Float32Array([1, 2])), 'CUDA_UNAVAILABLE');
    expectSwerlError(
      () => new PagedKvCache({ numBlocks: 4, numLayers: 1, numKvHeads: 1, headDim: 8, device: 'cuda' }),
      'CUDA_UNAVAILABLE',
    );
    // the CPU path is unaffected
    const kv = new PagedKvCache({ numBlocks: 4, numLayers: 1, numKvHeads: 1, headDim: 8, device: 'cpu' });
    expect(kv.createSequence()).toBeGreaterThanOrEqual(0);
    kv.dispose();
  });

  it.skipIf(info.cudaDevices === 0)('work where there is one', () => {
    const t = DeviceTensor.from(new Float32Array([1, 2, 3]));
    expect(Array.from(t.toArray())).toEqual([1, 2, 3]);
    t.dispose();
  });
});
