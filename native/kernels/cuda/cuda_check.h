// CUDA_CHECK: turns a failed CUDA runtime call into swerl::Error(CUDA_ERROR) with file:line,
// instead of llm.c's exit().
#pragma once

#include "kernels/cuda/cuda_compat.h"

#include <string>

#include "common/error.h"

#define CUDA_CHECK(call)                                                                                        \
  do {                                                                                                          \
    cudaError_t err_ = (call);                                                                                  \
    if (err_ != cudaSuccess)                                                                                    \
      throw ::swerl::Error(::swerl::ErrorCode::CudaError, std::string(#call) +                                  \
                                                              " failed: " + cudaGetErrorString(err_) + " at " + \
                                                              __FILE__ + ":" + std::to_string(__LINE__));       \
  } while (0)
