// Chunked LM head + loss (see fused_lm_head_loss.h).
#include "train/fused_lm_head_loss.h"

#include <algorithm>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/gemm.h"

namespace swerl {

void fusedLmHeadLoss(const LmHead& h, TokenLoss& loss, float* dHidden, float* dWeight, float* logprobs) {
  SWERL_CHECK(h.chunkTokens >= 1, InvalidArgument, "chunkTokens must be >= 1");
  const size_t T = h.tokens, H = h.hiddenSize, V = h.vocab;
  const size_t chunk = std::min(h.chunkTokens, std::max<size_t>(T, 1));
  // The only [*, V] buffer: logits, then their gradient. Kept between calls: first-touching
  // chunk × V floats again on every call would cost page faults comparable to the loss itself.
  thread_local std::vector<float> logits;
  if (logits.size() < chunk * V) logits.resize(chunk * V);
  loss.logitsAreScratch();           // the logits buffer below is ours: pass 1 may keep its exps there
  const MatView W{h.weight, H, 1};   // W[v, h]
  const MatView Wt{h.weight, 1, H};  // Wᵀ: element (h, v)
  for (size_t t0 = 0; t0 < T; t0 += chunk) {
    const size_t n = std::min(chunk, T - t0);
    const float* X = h.hidden + t0 * H;
    gemm(n, V, H, MatView{X, H, 1}, Wt, logits.data(), V, 0.0f);                      // logits = X_c · Wᵀ
    loss.processRows(logits.data(), t0, n, logits.data(), logprobs);                  // now G = d loss / d logits
    gemm(n, H, V, MatView{logits.data(), V, 1}, W, dHidden + t0 * H, H, 0.0f);        // dX_c = G · W
    gemm(V, H, n, MatView{logits.data(), 1, V}, MatView{X, H, 1}, dWeight, H, 1.0f);  // dW += Gᵀ · X_c
  }
}

}  // namespace swerl
