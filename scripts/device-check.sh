#!/usr/bin/env bash
# The GPU check, one command, on a machine with an NVIDIA GPU (sm_90: H100/H200):
#
#   scripts/device-check.sh [RESULTS_DIR]     (default: $OUT, else device-check/)
#
# 1. builds the addon with CUDA for sm_90 (npm run build:native, CMAKE_CUDA_ARCHITECTURES=90);
# 2. runs the CUDA execution-model checks on the GPU (build/cmake/selftest/swerl_cuda_selftest:
#    the same source the simulation's tests run);
# 3. runs the CUDA test files (test/cuda/) against the GPU build: every kernel against the CPU
#    kernel on the same inputs;
# 4. runs the GPU benchmarks (node bench/run.mjs --suite cuda).
# It writes RESULTS_DIR/{env,nvidia-smi,build,execution-model,cuda-tests,bench}.txt and
# bench-cuda.json, prints a summary, and exits non-zero if a step failed. It is sized to finish in
# under 8 minutes on an H200.
#
# The GPU machine needs Node 20 and this checkout's node_modules and dist/. Where it cannot fetch
# packages, run `scripts/device-check.sh --pack` here first: it writes .device/ (this machine's
# node binary, node_modules without the lint and type-check tools, dist/), which the check
# unpacks when node or node_modules is missing. Carry .device/ with the checkout.
set -u
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--pack" ]; then
  set -e
  mkdir -p .device
  npm run build:ts >/dev/null
  tar -C "$(dirname "$(dirname "$(command -v node)")")" -cJf .device/node.tar.xz bin/node
  tar -cJf .device/node_modules.tar.xz --exclude=node_modules/@biomejs --exclude=node_modules/typescript \
    --exclude=node_modules/@types node_modules
  tar -cJf .device/dist.tar.xz dist
  du -sh .device/*
  echo "wrote .device/: carry it (it is git-ignored) and run scripts/device-check.sh there"
  exit 0
fi

out="${1:-${OUT:-device-check}}"
mkdir -p "$out"
start=$(date +%s)
status=0
step() { # step NAME SECONDS COMMAND...: runs COMMAND with a time limit, output to $out/NAME.txt
  local name=$1 limit=$2
  shift 2
  local t0=$(date +%s)
  if timeout "$limit" "$@" >"$out/$name.txt" 2>&1; then
    echo "ok      $name ($(($(date +%s) - t0)) s)"
  else
    echo "FAILED  $name ($(($(date +%s) - t0)) s): see $out/$name.txt"
    tail -20 "$out/$name.txt"
    status=1
  fi
}

nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || echo "nvidia-smi failed: is there a GPU?"
if ! command -v node >/dev/null && [ -f .device/node.tar.xz ]; then
  mkdir -p /tmp/swerl-node && tar -C /tmp/swerl-node -xJf .device/node.tar.xz && export PATH="/tmp/swerl-node/bin:$PATH"
fi
[ -d node_modules ] || { [ -f .device/node_modules.tar.xz ] && tar -xJf .device/node_modules.tar.xz; }
[ -d dist ] || { [ -f .device/dist.tar.xz ] && tar -xJf .device/dist.tar.xz; }
command -v node >/dev/null || { echo "no node on PATH and no .device/node.tar.xz: run scripts/device-check.sh --pack"; exit 2; }

# The tools' versions, and cuBLAS: the fused losses open libcublas.so.13 at run time; where the
# loader's path lacks it, the first copy on the machine (the CUDA toolkit's or a Python wheel's).
{
  echo "node $(node --version)"
  nvcc --version | tail -2
  cmake --version | head -1
  g++ --version | head -1
  if [ -z "${SWERL_CUBLAS_PATH:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libcublas\.so\.13'; then
    cublas=$(find /usr/local /usr/lib /opt -name 'libcublas.so.13*' 2>/dev/null | head -1)
    [ -n "$cublas" ] && export SWERL_CUBLAS_PATH=$cublas
  fi
  echo "cuBLAS: ${SWERL_CUBLAS_PATH:-libcublas.so.13 on the loader path}"
} >"$out/env.txt" 2>&1
cat "$out/env.txt"

# node and the package's scripts directly, not npm or npx: a GPU machine may have node alone.
build_native() { # the build's own log after its summary, so that a failure shows its cause
  SWERL_VERBOSE_BUILD=1 node scripts/build-native.mjs --CDCMAKE_CUDA_ARCHITECTURES=90
  local rc=$?
  tail -200 build/native-build.log 2>/dev/null
  return $rc
}
export -f build_native
step build 300 bash -c build_native
gpu_selftest() { # fails where the addon sees no GPU: the tests would then skip, not fail
  SWERL_NATIVE_PATH=build/cmake/Release/swerl.node node -e \
    "import('./dist/index.js').then((m) => { const i = m.nativeInfo(); console.log(JSON.stringify(i)); process.exit(i.cudaDevices > 0 ? 0 : 1); })" &&
    build/cmake/selftest/swerl_cuda_selftest
}
export -f gpu_selftest
step execution-model 60 bash -c gpu_selftest
step cuda-tests 240 env SWERL_CUDA_TESTS_ADDON=build/cmake/Release/swerl.node \
  node node_modules/vitest/vitest.mjs run --project cuda --reporter=verbose
step bench 120 node bench/run.mjs --suite cuda --out "$out/bench-cuda.json"

grep -E "^(ok|not ok)" "$out/execution-model.txt" | sed 's/^/  /' | head -40
grep -E "Tests|Test Files" "$out/cuda-tests.txt" | sed 's/^/  /'
grep -E "GB/s|skipped" "$out/bench.txt" | sed 's/^/  /'
echo "device check: $(($(date +%s) - start)) s, results in $out"
exit $status
