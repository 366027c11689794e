#!/usr/bin/env python3
"""NumPy baselines of the sample and loss suites (bench/sample.mjs, bench/loss.mjs).

Each kernel is written the way eager PyTorch runs it (vLLM's native sampler path, verl's policy
loss plus autograd's backward): one full [rows, vocab] float32 temporary per operation, sorts over
whole rows for top-k/top-p. The data are generated here with the same shapes and the same kind of
rows as the JS side (N(0, 2^2) noise plus a few +8 spikes, seeded), not the same values.

Usage: python3 bench/numpy_baselines.py SPEC_JSON   (or the spec on stdin)

  {"seed": 0, "warmup": 1, "reps": 3,
   "sample": [{"B": 64, "V": 151936, "modes": ["greedy", "temperature", "topp", "topk_topp"], "reps": 3}],
   "loss": [{"T": 1024, "V": 151936, "kinds": ["policy", "sft"]}],
   "fused": [{"T": 256, "H": 896, "V": 151936}]}

Prints one JSON object {name: seconds_per_call} on stdout, names as the JS records
(sample.<mode>.B<B>.V<V>, loss.<kind>.T<T>.V<V>); seconds are the mean over `reps` calls after
`warmup` calls (an entry's own "reps" overrides the global one), timed with time.perf_counter.
The NumPy version and whether it madvises huge pages go to stderr. NumPy's
elementwise operations and sorts run on one thread.
"""

import json
import sys
import time

import numpy as np

F32 = np.float32
SPIKES = 5
SPIKE = F32(8.0)

# The modes of the sampler suite: temperature, top-k, top-p (0 / 1 = off).
MODES = {
    "greedy": {"temperature": 0.0, "top_k": 0, "top_p": 1.0},
    "temperature": {"temperature": 0.7, "top_k": 0, "top_p": 1.0},
    "topp": {"temperature": 1.0, "top_k": 0, "top_p": 0.95},
    "topk_topp": {"temperature": 1.0, "top_k": 50, "top_p": 0.95},
}


def lm_rows(rng, rows, vocab):
    """LM-like logits: N(0, 2^2) noise plus SPIKES tokens at +8 per row."""
    x = rng.standard_normal((rows, vocab), dtype=F32)
    x *= F32(2.0)
    cols = rng.integers(0, vocab, size=(rows, SPIKES))
    x[np.arange(rows)[:, None], cols] += SPIKE
    return x


def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def log_softmax(x):
    m = x.max(axis=-1, keepdims=True)
    s = x - m
    return s - np.log(np.exp(s).sum(axis=-1, keepdims=True))


def draw(probs, u):
    """Inverse-CDF draw per row: cumsum, then searchsorted of u times the row's total."""
    cdf = np.cumsum(probs, axis=-1)
    out = np.empty(probs.shape[0], dtype=np.int64)
    last = probs.shape[1] - 1
    for i in range(probs.shape[0]):
        out[i] = min(np.searchsorted(cdf[i], u[i] * cdf[i, -1], side="right"), last)
    return out


def apply_top_k_top_p(logits, k, p):
    """vLLM's apply_top_k_top_p (native path): sort each row ascending, mask, scatter back."""
    idx = np.argsort(logits, axis=-1)
    srt = np.take_along_axis(logits, idx, axis=-1)
    vocab = logits.shape[1]
    if k > 0:
        kth = srt[:, vocab - k][:, None]
        srt = np.where(srt < kth, F32(-np.inf), srt)
    if p < 1.0:
        cum = np.cumsum(softmax(srt), axis=-1)
        mask = cum <= F32(1.0 - p)
        mask[:, -1] = False
        srt[mask] = F32(-np.inf)
    out = np.empty_like(logits)
    np.put_along_axis(out, idx, srt, axis=-1)
    return out


def sample(logits, mode, u):
    """One batched sampler call: tokens, logprobs under the sampled distribution, raw logprobs."""
    rows = np.arange(logits.shape[0])
    raw_lp = log_softmax(logits)
    if mode["temperature"] == 0.0:
        tokens = logits.argmax(axis=-1)
        return tokens, raw_lp[rows, tokens], raw_lp[rows, tokens]
    x = logits / F32(mode["temperature"])
    if mode["top_k"] > 0 or mode["top_p"] < 1.0:
        x = apply_top_k_top_p(x, mode["top_k"], mode["top_p"])
    probs = softmax(x)
    tokens = draw(probs, u)
    return tokens, np.log(probs[rows, tokens]), raw_lp[rows, tokens]


def loss_inputs(rng, T, V):
    logits = lm_rows(rng, T, V)
    targets = logits.argmax(axis=-1)
    noisy = rng.random(T) < 0.3
    targets[noisy] = rng.integers(0, V, size=int(noisy.sum()))
    lp = log_softmax(logits)[np.arange(T), targets]
    old = (lp + rng.normal(0.0, 0.3, T)).astype(F32)
    adv = np.where(rng.random(T) < 0.5, F32(1.0), F32(-1.0)).astype(F32)
    mask = (rng.random(T) < 0.9).astype(F32)
    return logits, targets, old, adv, mask


def policy_loss(logits, targets, old, adv, mask, clip_low=0.2, clip_high=0.28):
    """verl's PPO-clip (DAPO clip-higher, token-mean) forward, entropy, and the logits gradient."""
    rows = np.arange(logits.shape[0])
    lp_all = log_softmax(logits)
    logp = lp_all[rows, targets]
    diff = logp - old
    ratio = np.exp(np.clip(diff, F32(-20.0), F32(20.0)))
    pg1 = -adv * ratio
    pg2 = -adv * np.clip(ratio, F32(1.0 - clip_low), F32(1.0 + clip_high))
    pg = np.maximum(pg1, pg2)
    msum = mask.sum()
    loss = (pg * mask).sum() / msum
    probs = np.exp(lp_all)
    entropy = ((-(probs * lp_all).sum(axis=-1)) * mask).sum() / msum
    # d loss / d logp, then d logp / d logits = onehot - softmax.
    dlogp = np.where((pg1 >= pg2) & (np.abs(diff) < 20), -adv * ratio, F32(0.0)) * mask / msum
    grad = probs * (-dlogp.astype(F32))[:, None]
    grad[rows, targets] += dlogp.astype(F32)
    return loss, grad, logp, entropy


def sft_loss(logits, targets, mask):
    """Masked mean cross-entropy and its logits gradient (softmax - onehot) * mask / sum(mask)."""
    rows = np.arange(logits.shape[0])
    lp_all = log_softmax(logits)
    logp = lp_all[rows, targets]
    msum = mask.sum()
    loss = -(logp * mask).sum() / msum
    grad = np.exp(lp_all) * (mask / msum)[:, None]
    grad[rows, targets] -= mask / msum
    return loss, grad, logp


def fused_lm_head_sft(hidden, weight, targets, mask):
    """The SFT loss through the LM head, as PyTorch runs it unfused: logits = X·Wᵀ (BLAS), the
    loss and its logits gradient, then dX = G·W and dW = Gᵀ·X (BLAS)."""
    logits = hidden @ weight.T
    loss, grad, _ = sft_loss(logits, targets, mask)
    return loss, grad @ weight, grad.T @ hidden


def hugepage():
    """Whether NumPy madvises transparent huge pages for its large arrays (it does by default on
    Linux >= 4.6): with THP in 'madvise' mode, its temporaries then fault in 2 MiB at a time."""
    try:
        return bool(np._core.multiarray._get_madvise_hugepage())
    except AttributeError:
        return None


def timed(fn, warmup, reps):
    for _ in range(warmup):
        fn()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def main():
    raw = sys.argv[1] if len(sys.argv) > 1 else sys.stdin.read()
    spec = json.loads(raw)
    seed = int(spec.get("seed", 0))
    warmup = int(spec.get("warmup", 1))
    reps = int(spec.get("reps", 3))
    print(f"numpy {np.__version__} hugepage={hugepage()}", file=sys.stderr)
    out = {}
    for s in spec.get("sample", []):
        B, V = int(s["B"]), int(s["V"])
        rng = np.random.default_rng(seed)
        logits = lm_rows(rng, B, V)
        n = int(s.get("reps", reps))
        for name in s["modes"]:
            mode = MODES[name]
            urng = np.random.default_rng(seed + 1)
            out[f"sample.{name}.B{B}.V{V}"] = timed(lambda: sample(logits, mode, urng.random(B)), warmup, n)
        del logits
    for s in spec.get("loss", []):
        T, V = int(s["T"]), int(s["V"])
        rng = np.random.default_rng(seed)
        logits, targets, old, adv, mask = loss_inputs(rng, T, V)
        for kind in s["kinds"]:
            if kind == "policy":
                fn = lambda: policy_loss(logits, targets, old, adv, mask)  # noqa: E731
            elif kind == "sft":
                fn = lambda: sft_loss(logits, targets, mask)  # noqa: E731
            else:
                raise ValueError(f"unknown loss kind {kind}")
            out[f"loss.{kind}.T{T}.V{V}"] = timed(fn, warmup, int(s.get("reps", reps)))
        del logits
    for s in spec.get("fused", []):
        T, H, V = int(s["T"]), int(s["H"]), int(s["V"])
        rng = np.random.default_rng(seed)
        hidden = rng.standard_normal((T, H), dtype=F32)
        weight = (rng.standard_normal((V, H), dtype=F32) * F32(0.05)).astype(F32)
        targets = rng.integers(0, V, size=T)
        mask = np.ones(T, dtype=F32)
        fn = lambda: fused_lm_head_sft(hidden, weight, targets, mask)  # noqa: E731
        out[f"loss.fused_lmhead.T{T}.H{H}.V{V}"] = timed(fn, warmup, int(s.get("reps", reps)))
    for s in spec.get("gemm", []):
        M, N, K = int(s["M"]), int(s["N"]), int(s["K"])
        rng = np.random.default_rng(seed)
        a = rng.standard_normal((M, K), dtype=F32)
        w = rng.standard_normal((N, K), dtype=F32)
        c = np.empty((M, N), dtype=F32)
        fn = lambda: np.matmul(a, w.T, out=c)  # noqa: E731  x·Wᵀ, as a linear layer
        out[f"gemm.f32.M{M}.N{N}.K{K}"] = timed(fn, warmup, int(s.get("reps", reps)))
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
