#!/usr/bin/env bash
# Builds Kiln with LLVM/MLIR linked statically (KILN_STATIC_LLVM=ON) and
# gathers what the GPU machine runs -- libkiln.so (LLVM inside),
# libkiln_runtime.so, the tools, the test and example programs, stripped --
# into .device/bundle, a folder git ignores, ready to be carried to the GPU
# machine (64 MiB at most).
set -euo pipefail
cd "$(dirname "$0")/.."

# (Without the AMD back end: the GPU machine is NVIDIA's, and LLVM's AMDGPU
# target would take the bundle past what the machine is sent.)
cmake -S . -B build-static -G Ninja -DKILN_STATIC_LLVM=ON -DKILN_BUILD_TESTS=ON -DKILN_AMDGPU=OFF
cmake --build build-static

bundle=.device/bundle
rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib"
cp build-static/lib/libkiln.so build-static/lib/libkiln_runtime.so build-static/lib/libkiln_ops.so build-static/lib/libkiln_tutorial.so \
  "$bundle/lib/"
for program in build-static/bin/*; do
  cp "$program" "$bundle/bin/"
done
# Google Benchmark is not on the GPU machine: the benchmarks carry it.
cp -L "$(ldd build-static/bin/memory_bench | awk '/libbenchmark/ {print $3}')" "$bundle/lib/"
strip --strip-unneeded "$bundle"/lib/*.so* "$bundle"/bin/*
# The mma.sync ceiling (bench/device/mma_sync_peak.cu), plain CUDA built
# here with the toolkit's nvcc where there is one, so that nothing is built
# on the GPU machine.
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2> /dev/null || true)
if [ -n "$nvcc" ]; then
  "$nvcc" -O3 -gencode=arch=compute_90a,code=sm_90a -o "$bundle/bin/mma_sync_peak" bench/device/mma_sync_peak.cu
fi
git describe --always --dirty --abbrev=12 > "$bundle/REVISION"
du -sh "$bundle"
