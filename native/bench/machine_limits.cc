// Machine-limit probes for the benchmark harness (see machine_limits.h).
#include "bench/machine_limits.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "common/cpu_features.h"
#include "common/error.h"

namespace swerl {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// Runs fn(t) on `threads` dedicated threads started together; returns wall seconds.
template <typename Fn>
double runOnThreads(int threads, Fn fn) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      fn(t);
    });
  while (ready.load() < threads) std::this_thread::yield();
  auto start = Clock::now();
  go.store(true, std::memory_order_release);
  for (auto& th : pool) th.join();
  return seconds(start, Clock::now());
}

}  // namespace

float fmaLoopScalar(long iters, float seed) {
  float acc[96];
  for (int i = 0; i < 96; ++i) acc[i] = seed + static_cast<float>(i) * 1e-3f;
  const float a = 0.999999f, b = 1e-7f;
  for (long it = 0; it < iters; ++it)
    for (int i = 0; i < 96; ++i) acc[i] = acc[i] * a + b;
  float s = 0;
  for (float x : acc) s += x;
  return s;
}

double measureStreamCopyGbps(size_t bytes, int reps, int threads) {
  SWERL_CHECK(bytes >= 1024 && reps >= 1 && threads >= 1, InvalidArgument, "bad stream benchmark parameters");
  bytes &= ~static_cast<size_t>(63);
  auto* src = static_cast<unsigned char*>(std::malloc(bytes));
  auto* dst = static_cast<unsigned char*>(std::malloc(bytes));
  SWERL_CHECK(src && dst, OutOfMemory, "cannot allocate the stream benchmark buffers");
  // First touch from the threads that will use each part (NUMA placement).
  runOnThreads(threads, [&](int t) {
    size_t lo = bytes * t / threads, hi = bytes * (t + 1) / threads;
    std::memset(src + lo, 1, hi - lo);
    std::memset(dst + lo, 0, hi - lo);
  });
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    double s = runOnThreads(threads, [&](int t) {
      size_t lo = (bytes * t / threads) & ~static_cast<size_t>(63),
             hi = (bytes * (t + 1) / threads) & ~static_cast<size_t>(63);
      if (t == threads - 1) hi = bytes;
      std::memcpy(dst + lo, src + lo, hi - lo);
    });
    best = std::max(best, 2.0 * static_cast<double>(bytes) / s / 1e9);
  }
  volatile unsigned char sink = dst[bytes / 2];
  (void)sink;
  std::free(src);
  std::free(dst);
  return best;
}

namespace {

bool cpuHasAvx512f() {
#if defined(__x86_64__)
  const char* forced = std::getenv("SWERL_SIMD");
  if (forced != nullptr && std::strcmp(forced, "scalar") == 0) return false;
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

}  // namespace

const char* peakFmaIsa() {
  if (cpuHasAvx512f()) return "avx512f";
  return simdLevelName(simdLevel());
}

double measurePeakFmaGflops(double seconds, int threads) {
  SWERL_CHECK(seconds > 0 && threads >= 1, InvalidArgument, "bad FMA benchmark parameters");
  // The widest FMA the CPU has, whatever the kernels use: this is the machine's limit.
  const bool avx512 = cpuHasAvx512f();
  const bool avx2 = hasAvx2();
  const double flopsPerIter = kFlopsPerFmaLoopIter * (avx512 ? 2 : 1);
  auto loop = [&](long iters, float seed) {
    return avx512 ? fmaLoopAvx512(iters, seed) : avx2 ? fmaLoopAvx2(iters, seed) : fmaLoopScalar(iters, seed);
  };
  // Calibrate the per-thread iteration count to about a tenth of the budget on one thread.
  long iters = 1 << 16;
  for (;;) {
    auto a = Clock::now();
    volatile float sink = loop(iters, 1.0f);
    (void)sink;
    double s = std::chrono::duration<double>(Clock::now() - a).count();
    if (s > seconds / 10 || iters > (1L << 34)) {
      iters = static_cast<long>(static_cast<double>(iters) * (seconds / 5) / std::max(s, 1e-9));
      break;
    }
    iters *= 4;
  }
  iters = std::max(iters, 1L << 12);
  double best = 0;
  std::vector<float> sinks(static_cast<size_t>(threads));
  for (int rep = 0; rep < 3; ++rep) {
    double s = runOnThreads(threads, [&](int t) { sinks[t] = loop(iters, 1.0f + t); });
    best = std::max(best, flopsPerIter * static_cast<double>(iters) * threads / s / 1e9);
  }
  return best;
}

}  // namespace swerl
