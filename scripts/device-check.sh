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
# It writes RESULTS_DIR/{nvidia-smi,build,execution-model,cuda-tests,bench}.txt and
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

step build 300 env SWERL_VERBOSE_BUILD=1 npm run build:native -- --CDCMAKE_CUDA_ARCHITECTURES=90
step execution-model 60 build/cmake/selftest/swerl_cuda_selftest
step cuda-tests 240 env SWERL_CUDA_TESTS_ADDON=build/cmake/Release/swerl.node \
  npx vitest run --project cuda --reporter=verbose
step bench 120 node bench/run.mjs --suite cuda --out "$out/bench-cuda.json"

grep -E "^(ok|not ok)" "$out/execution-model.txt" | sed 's/^/  /' | head -40
grep -E "Tests|Test Files" "$out/cuda-tests.txt" | sed 's/^/  /'
grep -E "GB/s|skipped" "$out/bench.txt" | sed 's/^/  /'
echo "device check: $(($(date +%s) - start)) s, results in $out"
exit $status
