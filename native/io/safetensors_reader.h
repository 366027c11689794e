// Copies tensors out of a safetensors file into f32 memory through one read-only mmap (no
// intermediate buffer), converting bf16/f16 on the way. The header is parsed and checked in
// TypeScript (src/model/safetensors.ts); this side re-checks every range against the file size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace swerl {

enum class TensorDtype { F32, F16, Bf16 };

/** One tensor to copy: `count` elements at byte `fileOffset` of the file into dst[0, count). */
struct TensorCopy {
  uint64_t fileOffset;
  uint64_t count;
  TensorDtype dtype;
  float* dst;
};

/**
 * Performs the copies (multi-threaded). Throws IO_ERROR when the file cannot be opened or mapped,
 * CORRUPT_FILE when a range runs past its end.
 */
void readSafetensors(const std::string& path, const std::vector<TensorCopy>& copies);

}  // namespace swerl
