// The row kernels and the GEMM have scalar, AVX2 and AVX-512 paths. Each level must keep the sampler's raw
// logprob bitwise equal to sftLoss's, all levels must sample the same tokens (the race scores its
// candidates exactly, whatever the level), and agree to float tolerance elsewhere.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const dist = join(import.meta.dirname, '..', '..', 'dist', 'index.js');

const script = `
  import { nativeInfo, policyLoss, sample, sftLoss, sftLossFused } from ${JSON.stringify(dist)};
  import { native } from ${JSON.stringify(dist.replace('index.js', 'native.js'))};
  const V = 50021, T = 6;
  let s = 7;
  const r = () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 4294967296 - 0.5);
  const logits = Float32Array.from({ length: T * V }, () => r() * 10);
  const targets = Int32Array.from({ length: T }, (_, t) => (t * 7919) % V);
  const mask = new Float32Array(T).fill(1);
  const modes = [{ temperature: 0.8, topP: 0.9 }, { temperature: 1.3 }, { topK: 40 }];
  const params = Array.from({ length: T }, (_, t) => ({ seed: t, ...modes[t % 3] }));
  const sm = sample(logits, V, params);
  const sf = sftLoss({ logits, vocab: V, targets: sm.tokens, mask });
  const pl = policyLoss({ logits, vocab: V, targets, mask, advantages: Float32Array.from(targets, (x) => (x % 2 ? 1 : -1)),
    oldLogprobs: new Float32Array(T).fill(-11) }, { entropyCoef: 0.01 });
  const [M, N, K] = [13, 40, 300];
  const A = Float32Array.from({ length: M * K }, r), B = Float32Array.from({ length: N * K }, r);
  const C = native().gemm(A, B, M, N, K, true);
  const H = 32, hidden = Float32Array.from({ length: T * H }, r), weight = Float32Array.from({ length: 2000 * H }, r);
  const fused = sftLossFused({ hidden, weight, hiddenSize: H, vocab: 2000, targets: Int32Array.from(targets, (x) => x % 2000), mask }, { chunkTokens: 2 });
  console.log(JSON.stringify({
    simd: nativeInfo().simd, tokens: Array.from(sm.tokens), gemm: Array.from(C), fusedLoss: fused.loss, fusedGrad: Array.from(fused.gradHidden),
    rawEqualsSft: sm.rawLogprobs.every((x, i) => Object.is(x, sf.logprobs[i])),
    raw: Array.from(sm.rawLogprobs), loss: pl.loss, entropy: pl.entropy,
    grad: Array.from(pl.gradLogits.subarray(0, 64)), lp: Array.from(pl.logprobs),
  }));`;

function run(simd?: string) {
  const env = { ...process.env };
  if (simd) env.SWERL_SIMD = simd;
  else delete env.SWERL_SIMD;
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { env }).toString());
}

describe('SIMD levels', () => {
  it.skipIf(!existsSync(dist))(
    'agree across scalar, AVX2 and the native level, and keep raw logprobs = sftLoss',
    () => {
      const levels = [run('scalar'), run('avx2'), run()];
      expect(levels[0].simd).toBe('scalar');
      for (const l of levels) expect(l.rawEqualsSft, l.simd).toBe(true);
      const [ref] = levels;
      for (const l of levels.slice(1)) {
        expect(l.tokens, l.simd).toEqual(ref.tokens);
        expect(Math.abs(l.loss - ref.loss)).toBeLessThan(1e-5 * Math.max(1, Math.abs(ref.loss)));
        expect(Math.abs(l.entropy - ref.entropy)).toBeLessThan(1e-5 * ref.entropy);
        for (let i = 0; i < ref.lp.length; i++) expect(Math.abs(l.lp[i] - ref.lp[i])).toBeLessThan(1e-5);
        for (let i = 0; i < ref.grad.length; i++) expect(Math.abs(l.grad[i] - ref.grad[i])).toBeLessThan(1e-6);
        for (let i = 0; i < ref.gemm.length; i++) expect(Math.abs(l.gemm[i] - ref.gemm[i])).toBeLessThan(1e-4);
        expect(Math.abs(l.fusedLoss - ref.fusedLoss)).toBeLessThan(1e-5 * Math.abs(ref.fusedLoss));
        for (let i = 0; i < ref.fusedGrad.length; i++)
          expect(Math.abs(l.fusedGrad[i] - ref.fusedGrad[i])).toBeLessThan(1e-5);
      }
    },
  );
});
