// The CPU's DecoderBackend table (see kernels/decoder_backend.h).
#include "kernels/cpu/attention.h"
#include "kernels/cpu/decoder_backward.h"
#include "kernels/cpu/decoder_kernels.h"
#include "kernels/cpu/gemm.h"
#include "kernels/decoder_backend.h"

namespace swerl {

const DecoderBackend& cpuDecoderBackend() {
  static const DecoderBackend table{
      "cpu",
      rmsNorm,
      ropeTables,
      applyRope,
      siluMul,
      addBias,
      causalAttention,
      causalAttentionBackward,
      rmsNormBackward,
      siluMulBackward,
      addColumnSums,
      embeddingBackward,
      gemm,
      gemmPacked,
  };
  return table;
}

}  // namespace swerl
