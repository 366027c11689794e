// What the rest of the core may ask about CUDA. Implemented by cuda_runtime.cu in a CUDA build
// and by cuda_absent.cc otherwise, so no other file needs #ifdefs.
#pragma once

#include <cstddef>

namespace swerl {

/** Whether this binary contains the CUDA kernels. */
bool cudaBuilt();
/** Whether the CUDA kernels run in the CPU simulation (the swerl_cudasim test addon). */
bool cudaSimulated();
/** Usable CUDA devices; 0 without a driver or GPU (never throws). */
int cudaDeviceCount();
/** The CUDA runtime version as major*1000 + minor*10, or 0. */
int cudaRuntimeVersion();
/**
 * The device's copy bandwidth in GB/s (bytes read + written per second) over `reps`
 * device-to-device copies of `bytes`, timed by CUDA events: the benchmarks' limit on a GPU (in
 * the simulation, a host memcpy). CUDA_UNAVAILABLE without a device.
 */
double measureDeviceCopyGbps(size_t bytes, int reps);

}  // namespace swerl
