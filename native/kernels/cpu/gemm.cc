// Blocked, packed, multi-threaded SGEMM (see gemm.h).
//
// Loop nest per thread (its own range of N, in multiples of 16 columns):
//   for each K block [pc, pc + kKc):          B panel for the thread's columns packed once
//     for each M block [ic, ic + kMc):        A block packed into 6- or 12-row panels
//       for each 16-column panel, 6-row panel: micro-kernel accumulates into C
// C is scaled by beta (or zeroed) before the first K block, so every element's sum runs over
// the K blocks in order.
#include "kernels/cpu/gemm.h"

#include <algorithm>
#include <vector>

#include "common/cpu_features.h"
#include "common/thread_pool.h"

namespace swerl {

void gemmMicroScalar(size_t kc, const float* a, const float* b, float* c, size_t ldc, size_t mr, size_t nr) {
  float acc[kGemmMr][kGemmNr] = {};
  for (size_t k = 0; k < kc; ++k)
    for (size_t i = 0; i < kGemmMr; ++i)
      for (size_t j = 0; j < kGemmNr; ++j) acc[i][j] += a[k * kGemmMr + i] * b[k * kGemmNr + j];
  for (size_t i = 0; i < mr; ++i)
    for (size_t j = 0; j < nr; ++j) c[i * ldc + j] += acc[i][j];
}

void gemmRowScalar(size_t kc, const float* a, const float* panels, size_t count, size_t nc, float* c) {
  for (size_t p = 0; p < count; ++p) {
    const float* b = panels + p * kc * kGemmNr;
    float acc[kGemmNr] = {};
    for (size_t k = 0; k < kc; ++k)
      for (size_t j = 0; j < kGemmNr; ++j) acc[j] += a[k] * b[k * kGemmNr + j];
    const size_t cols = std::min(kGemmNr, nc - p * kGemmNr);
    for (size_t j = 0; j < cols; ++j) c[p * kGemmNr + j] += acc[j];
  }
}

namespace {

// The micro-kernel for the SIMD level, its panel height, and the matching one-row kernel.
struct MicroKernel {
  void (*fn)(size_t, const float*, const float*, float*, size_t, size_t, size_t);
  size_t mr;
  void (*row)(size_t, const float*, const float*, size_t, size_t, float*);
  // Two adjacent panels per call, where the level has such a kernel.
  void (*fn2)(size_t, const float*, const float*, const float*, float*, size_t, size_t, size_t) = nullptr;
};

MicroKernel microKernel() {
  if (hasAvx512()) return {gemmMicroAvx512, kGemmMr512, gemmRowAvx512, gemmMicro2Avx512};
  if (hasAvx2()) return {gemmMicroAvx2, kGemmMr, gemmRowAvx2};
  return {gemmMicroScalar, kGemmMr, gemmRowScalar};
}

// Up to this many rows, each row of A runs the one-row kernel over the packed panels: the
// micro-kernels would spend most of their work on zero padding.
constexpr size_t kRowPathMaxM = 2;

// Packs A[ic:ic+mc, pc:pc+kc] into ceil(mc/MR) panels of [kc][MR], zero-padded.
void packA(MatView A, size_t ic, size_t mc, size_t pc, size_t kc, size_t MR, float* out) {
  for (size_t p = 0; p < mc; p += MR) {
    const size_t rows = std::min(MR, mc - p);
    for (size_t k = 0; k < kc; ++k) {
      float* dst = out + (p / MR) * kc * MR + k * MR;
      for (size_t i = 0; i < rows; ++i) dst[i] = A.at(ic + p + i, pc + k);
      for (size_t i = rows; i < MR; ++i) dst[i] = 0;
    }
  }
}

// Packs B[pc:pc+kc, jc:jc+nc] into ceil(nc/16) panels of [kc][16], zero-padded.
void packB(MatView B, size_t pc, size_t kc, size_t jc, size_t nc, float* out) {
  for (size_t q = 0; q < nc; q += kGemmNr) {
    const size_t cols = std::min(kGemmNr, nc - q);
    float* panel = out + (q / kGemmNr) * kc * kGemmNr;
    if (B.colStride == 1) {
      for (size_t k = 0; k < kc; ++k) {
        const float* src = B.data + (pc + k) * B.rowStride + jc + q;
        float* dst = panel + k * kGemmNr;
        std::copy(src, src + cols, dst);
        std::fill(dst + cols, dst + kGemmNr, 0.0f);
      }
    } else {
      for (size_t j = 0; j < cols; ++j) {
        const float* src = B.data + (jc + q + j) * B.colStride + pc * B.rowStride;
        for (size_t k = 0; k < kc; ++k) panel[k * kGemmNr + j] = src[k * B.rowStride];
      }
      for (size_t j = cols; j < kGemmNr; ++j)
        for (size_t k = 0; k < kc; ++k) panel[k * kGemmNr + j] = 0;
    }
  }
}

// C[:, jc:jc+nc] over all of K. B's panels come from `pre` (packed once) or are packed here.
void gemmRange(size_t M, size_t K, MatView A, MatView B, const PackedMatrix* pre, float* C, size_t ldc, float beta,
               size_t jc, size_t nc, MicroKernel micro) {
  if (nc == 0) return;
  for (size_t i = 0; i < M; ++i) {
    float* row = C + i * ldc + jc;
    if (beta == 0)
      std::fill(row, row + nc, 0.0f);
    else if (beta != 1)
      for (size_t j = 0; j < nc; ++j) row[j] *= beta;
  }
  thread_local std::vector<float> packedA, packedB, aRow;
  const size_t npanels = (nc + kGemmNr - 1) / kGemmNr;
  if (!pre) packedB.resize(npanels * kGemmKc * kGemmNr);
  packedA.resize(kGemmMc * kGemmKc);
  aRow.resize(kGemmKc);
  for (size_t pc = 0; pc < K; pc += kGemmKc) {
    const size_t kc = std::min(kGemmKc, K - pc);
    const float* panels = pre ? pre->panels(pc, jc / kGemmNr) : packedB.data();
    if (!pre) packB(B, pc, kc, jc, nc, packedB.data());
    if (M <= kRowPathMaxM) {
      for (size_t i = 0; i < M; ++i) {
        const float* a = A.data + i * A.rowStride + pc * A.colStride;
        if (A.colStride != 1) {
          for (size_t k = 0; k < kc; ++k) aRow[k] = a[k * A.colStride];
          a = aRow.data();
        }
        micro.row(kc, a, panels, npanels, nc, C + i * ldc + jc);
      }
      continue;
    }
    for (size_t ic = 0; ic < M; ic += kGemmMc) {
      const size_t mc = std::min(kGemmMc, M - ic);
      packA(A, ic, mc, pc, kc, micro.mr, packedA.data());
      size_t q = 0;
      if (micro.fn2)  // pairs of panels while two remain
        for (; q + kGemmNr < nc; q += 2 * kGemmNr) {
          const size_t nr = std::min(2 * kGemmNr, nc - q);
          const float* bp = panels + (q / kGemmNr) * kc * kGemmNr;
          for (size_t p = 0; p < mc; p += micro.mr) {
            const size_t mr = std::min(micro.mr, mc - p);
            micro.fn2(kc, packedA.data() + (p / micro.mr) * kc * micro.mr, bp, bp + kc * kGemmNr,
                      C + (ic + p) * ldc + jc + q, ldc, mr, nr);
          }
        }
      for (; q < nc; q += kGemmNr) {
        const size_t nr = std::min(kGemmNr, nc - q);
        const float* bp = panels + (q / kGemmNr) * kc * kGemmNr;
        for (size_t p = 0; p < mc; p += micro.mr) {
          const size_t mr = std::min(micro.mr, mc - p);
          micro.fn(kc, packedA.data() + (p / micro.mr) * kc * micro.mr, bp, C + (ic + p) * ldc + jc + q, ldc, mr, nr);
        }
      }
    }
  }
}

// Splits N over the pool in whole panels and runs gemmRange on each part.
void gemmSplit(size_t M, size_t N, size_t K, MatView A, MatView B, const PackedMatrix* pre, float* C, size_t ldc,
               float beta) {
  if (M == 0 || N == 0) return;
  const MicroKernel micro = microKernel();
  ThreadPool& pool = ThreadPool::global();
  const size_t panels = (N + kGemmNr - 1) / kGemmNr;
  const size_t work = M * N * std::max<size_t>(K, 1);
  const size_t tasks =
      std::min<size_t>({static_cast<size_t>(pool.size()), panels, std::max<size_t>(1, work / (1 << 20))});
  if (tasks <= 1) {
    gemmRange(M, K, A, B, pre, C, ldc, beta, 0, N, micro);
    return;
  }
  pool.run(static_cast<int>(tasks), [&](int t) {
    const size_t p0 = panels * t / tasks, p1 = panels * (t + 1) / tasks;
    const size_t j0 = p0 * kGemmNr, j1 = std::min(N, p1 * kGemmNr);
    gemmRange(M, K, A, B, pre, C, ldc, beta, j0, j1 > j0 ? j1 - j0 : 0, micro);
  });
}

}  // namespace

void gemm(size_t M, size_t N, size_t K, MatView A, MatView B, float* C, size_t ldc, float beta) {
  gemmSplit(M, N, K, A, B, nullptr, C, ldc, beta);
}

void gemmPacked(size_t M, MatView A, const PackedMatrix& B, float* C, size_t ldc, float beta) {
  gemmSplit(M, B.cols(), B.rows(), A, MatView{nullptr, 0, 0}, &B, C, ldc, beta);
}

void PackedMatrix::pack(MatView B, size_t K, size_t N) {
  K_ = K;
  N_ = N;
  npanels_ = (N + kGemmNr - 1) / kGemmNr;
  data_.resize(npanels_ * kGemmNr * K);
  const size_t blocks = (K + kGemmKc - 1) / kGemmKc;
  // One task per (K block, group of panels); each writes its own part of data_.
  const size_t groups = (npanels_ + 15) / 16;
  parallelFor(blocks * groups, kGemmKc * 256, 1 << 16, [&](size_t item) {
    const size_t pc = (item / groups) * kGemmKc, g = item % groups;
    const size_t kc = std::min(kGemmKc, K - pc);
    const size_t p0 = g * 16, p1 = std::min(npanels_, p0 + 16);
    const size_t jc = p0 * kGemmNr, nc = std::min(N, p1 * kGemmNr) - jc;
    packB(B, pc, kc, jc, nc, data_.data() + pc * npanels_ * kGemmNr + p0 * kc * kGemmNr);
  });
}

}  // namespace swerl
