// Kernel test hooks: thin bindings over single CPU kernels (GEMM, packed GEMM, attention scores
// and gradients), so that tests and benchmarks can check each against a float64 reference and
// time it alone. Each converts and checks its arguments and calls the kernel; the arithmetic lives
// in native/kernels/cpu.
#include <cmath>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/gemm.h"
#include "napi/args.h"
#include "napi/errors.h"

namespace swerl::napi {

namespace {
// Dimensions up to 2^31: products of two stay far inside int64 and size_t, so a huge or
// wrapped-around size is refused instead of passing a shape check by overflow.
constexpr int64_t kMaxDim = int64_t{1} << 31;
}  // namespace

// gemm(a: Float32Array [M, K], b: Float32Array, M, N, K, bTransposed: boolean) -> C [M, N]
// (b is [K, N], or [N, K] when bTransposed). For tests and benchmarks.
Napi::Value Gemm(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    Napi::Float32Array a = argFloat32Array(info, 0, "a"), b = argFloat32Array(info, 1, "b");
    const int64_t M = argInteger(info, 2, "M"), N = argInteger(info, 3, "N"), K = argInteger(info, 4, "K");
    require(env, M >= 0 && N >= 0 && K >= 0 && M <= kMaxDim && N <= kMaxDim && K <= kMaxDim,
            "M, N, K must be in [0, 2^31]");
    require(env, info.Length() > 5 && info[5].IsBoolean(), "bTransposed must be a boolean");
    const bool bt = info[5].As<Napi::Boolean>().Value();
    require(env, a.ElementLength() == static_cast<size_t>(M * K) && b.ElementLength() == static_cast<size_t>(K * N),
            "a must be [M, K] and b [K, N] (or [N, K])");
    // out (optional): a caller's [M, N] buffer, reused across calls (benchmarks).
    Napi::Float32Array c = info.Length() > 6 && info[6].IsTypedArray() ? argFloat32Array(info, 6, "out")
                                                                       : Napi::Float32Array::New(env, M * N);
    require(env, c.ElementLength() == static_cast<size_t>(M * N), "out must be [M, N]");
    const MatView B = bt ? MatView{b.Data(), 1, static_cast<size_t>(K)} : MatView{b.Data(), static_cast<size_t>(N), 1};
    gemm(M, N, K, MatView{a.Data(), static_cast<size_t>(K), 1}, B, c.Data(), N, 0.0f);
    return c;
  });
}

// attentionScores(q: Float32Array [hd], keys: Float32Array [n, hd], perRow: boolean) -> [n]:
// the attention kernels' q·k scores (tiled, or one dot per row). For tests and benchmarks.
Napi::Value AttentionScores(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    Napi::Float32Array q = argFloat32Array(info, 0, "q"), keys = argFloat32Array(info, 1, "keys");
    const size_t hd = q.ElementLength();
    require(env, hd >= 1 && keys.ElementLength() % hd == 0, "keys must be [n, q.length]");
    require(env, info.Length() > 2 && info[2].IsBoolean(), "perRow must be a boolean");
    const size_t n = keys.ElementLength() / hd;
    Napi::Float32Array out = Napi::Float32Array::New(env, n);
    attentionScores(q.Data(), keys.Data(), n, hd, info[2].As<Napi::Boolean>().Value(), out.Data());
    return out;
  });
}

// attentionGradients(qkv: Float32Array [T, (heads + 2·kvHeads)·headDim], dO: Float32Array
// [T, heads·headDim], heads, kvHeads, headDim) -> { o, lse, dqkv }: causal attention of one dense
// sequence (scale 1/√headDim) and its backward, as a decoder layer runs them. For tests.
Napi::Value AttentionGradients(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    Napi::Float32Array qkv = argFloat32Array(info, 0, "qkv"), dO = argFloat32Array(info, 1, "dO");
    const int64_t H = argInteger(info, 2, "heads"), G = argInteger(info, 3, "kvHeads"),
                  hd = argInteger(info, 4, "headDim");
    require(
        env, H >= 1 && G >= 1 && hd >= 1 && H <= 1 << 16 && hd <= 1 << 16 && H % G == 0 && H / G <= 64,
        "heads and kvHeads must be in [1, 65536], heads a multiple of kvHeads (at most 64 per group), headDim in [1, "
        "65536]");
    const size_t stride = static_cast<size_t>((H + 2 * G) * hd);
    require(env, qkv.ElementLength() % stride == 0, "qkv must be [T, (heads + 2 kvHeads) headDim]");
    const size_t T = qkv.ElementLength() / stride;
    require(env, dO.ElementLength() == T * H * hd, "dO must be [T, heads headDim]");
    Napi::Float32Array o = Napi::Float32Array::New(env, T * H * hd), lse = Napi::Float32Array::New(env, T * H),
                       dqkv = Napi::Float32Array::New(env, T * stride);
    const AttentionShape shape{static_cast<size_t>(H), static_cast<size_t>(G), static_cast<size_t>(hd),
                               1.0f / std::sqrt(static_cast<float>(hd))};
    attentionGradients(qkv.Data(), T, shape, dO.Data(), o.Data(), lse.Data(), dqkv.Data());
    Napi::Object out = Napi::Object::New(env);
    out.Set("o", o);
    out.Set("lse", lse);
    out.Set("dqkv", dqkv);
    return out;
  });
}

// packMatrix(w, N, K): w [N, K] (a weight in Hugging Face layout) packed as the B [K, N] of
// x·wᵀ, held natively; for gemmPacked.
Napi::Value PackMatrix(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    Napi::Float32Array w = argFloat32Array(info, 0, "w");
    const int64_t N = argInteger(info, 1, "N"), K = argInteger(info, 2, "K");
    require(env, N >= 1 && K >= 1 && N <= kMaxDim && K <= kMaxDim, "N and K must be in [1, 2^31]");
    require(env, w.ElementLength() == static_cast<size_t>(N * K), "w must be [N, K]");
    auto* m = new PackedMatrix();
    m->pack(MatView{w.Data(), 1, static_cast<size_t>(K)}, K, N);
    return Napi::External<PackedMatrix>::New(env, m, [](Napi::Env, PackedMatrix* p) { delete p; });
  });
}

// gemmPacked(a, packed, M, out): out [M, N] = a [M, K] · packed.
Napi::Value GemmPacked(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    Napi::Float32Array a = argFloat32Array(info, 0, "a");
    require(env, info.Length() > 1 && info[1].IsExternal(), "packed must come from packMatrix");
    const PackedMatrix& p = *info[1].As<Napi::External<PackedMatrix>>().Data();
    const int64_t M = argInteger(info, 2, "M");
    require(env, M >= 0 && M <= kMaxDim, "M must be in [0, 2^31]");
    Napi::Float32Array out = argFloat32Array(info, 3, "out");
    require(env,
            a.ElementLength() == static_cast<size_t>(M) * p.rows() &&
                out.ElementLength() == static_cast<size_t>(M) * p.cols(),
            "a must be [M, K] and out [M, N]");
    gemmPacked(M, MatView{a.Data(), p.rows(), 1}, p, out.Data(), p.cols(), 0.0f);
    return out;
  });
}

}  // namespace swerl::napi
