// Single-precision GEMM on the CPU: C = A·B + beta·C with arbitrary strides, so one routine
// serves x·Wᵀ (logits), dY·W (input gradients) and dYᵀ·X (weight gradients).
//
// Blocked and packed (K in blocks of kKc, M in blocks of kMc, N split over threads), with a
// 12×16 AVX-512 micro-kernel, a 6×16 AVX2/FMA one and a portable one. Each C element is reduced over k in the same
// fixed order (K blocks in order, k in order inside a block) whatever M, N or the thread count
// are, so a row's result does not depend on the batch it is computed in.
#pragma once

#include <cstddef>
#include <vector>

namespace swerl {

// Panels: A in kGemmMr-row panels (12 for the AVX-512 kernel), B in 16-column panels. kGemmMc is a
// multiple of both row heights.
constexpr size_t kGemmMr = 6, kGemmMr512 = 12, kGemmNr = 16, kGemmKc = 256, kGemmMc = 72;

/** A view of a matrix: element (i, j) is data[i * rowStride + j * colStride]. */
struct MatView {
  const float* data;
  size_t rowStride, colStride;
  float at(size_t i, size_t j) const { return data[i * rowStride + j * colStride]; }
};

/** C[M, N] (row-major, leading dimension ldc) = A[M, K] · B[K, N] + beta · C. */
void gemm(size_t M, size_t N, size_t K, MatView A, MatView B, float* C, size_t ldc, float beta);

/**
 * B [K, N] packed once into the micro-kernels' panel layout, for repeated products with the same
 * matrix (a layer's weights): K blocks of kGemmKc in order, each holding ceil(N / 16) panels of
 * [kc][16], zero-padded. gemmPacked gives bitwise the same C as gemm on the unpacked matrix.
 */
class PackedMatrix {
 public:
  /** Packs B (multi-threaded). */
  void pack(MatView B, size_t K, size_t N);
  bool empty() const { return data_.empty(); }
  size_t rows() const { return K_; }
  size_t cols() const { return N_; }
  /** The panels of K block starting at pc, from panel index p on. */
  const float* panels(size_t pc, size_t p) const {
    const size_t kc = K_ - pc < kGemmKc ? K_ - pc : kGemmKc;
    return data_.data() + pc * npanels_ * 16 + p * kc * 16;
  }

 private:
  std::vector<float> data_;
  size_t K_ = 0, N_ = 0, npanels_ = 0;
};

/** C[M, N] = A[M, K] · B + beta · C for a packed B [K, N]. */
void gemmPacked(size_t M, MatView A, const PackedMatrix& B, float* C, size_t ldc, float beta);

/** The micro-kernels: C[mr, nr] += Apanel[kc × MR] · Bpanel[kc × 16] (packed, zero-padded). */
void gemmMicroAvx2(size_t kc, const float* a, const float* b, float* c, size_t ldc, size_t mr, size_t nr);
void gemmMicroAvx512(size_t kc, const float* a, const float* b, float* c, size_t ldc, size_t mr, size_t nr);
void gemmMicroScalar(size_t kc, const float* a, const float* b, float* c, size_t ldc, size_t mr, size_t nr);
/** The AVX-512 micro-kernel over two adjacent panels (b0 full, b1 holding nr − 16 columns): 12×32. */
void gemmMicro2Avx512(size_t kc, const float* a, const float* b0, const float* b1, float* c, size_t ldc, size_t mr,
                      size_t nr);

/**
 * One row of A (kc contiguous values) against `count` consecutive panels of one K block:
 * c[16p + j] += Σ_k a[k] · panel_p[k][j] for columns below nc, with the same per-element
 * arithmetic as row 0 of the micro-kernel of the same SIMD level (so the same bits); for
 * decode-sized M, where the micro-kernels would mostly multiply padding.
 */
void gemmRowAvx512(size_t kc, const float* a, const float* panels, size_t count, size_t nc, float* c);
void gemmRowAvx2(size_t kc, const float* a, const float* panels, size_t count, size_t nc, float* c);
void gemmRowScalar(size_t kc, const float* a, const float* panels, size_t count, size_t nc, float* c);

}  // namespace swerl
