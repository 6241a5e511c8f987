# shellcheck shell=bash
# The statically linked tools run there; unit and GPU tests (and the GPU
# tests under compute-sanitizer); the examples on the GPU; the ops from
# Python (sourced by bench/device/run.sh for: checks, all).

if [ "$part" = checks ] || [ "$part" = all ]; then
record "libkiln.so needs no LLVM" bash -c "! ldd $bundle/lib/libkiln.so | grep -qiE 'llvm|mlir|not found'"
record "kiln-info links only libkiln_runtime.so" bash -c "ldd $bundle/bin/kiln-info | grep -q libkiln_runtime.so && ! ldd $bundle/bin/kiln-info | grep -qiE 'libkiln\.so|llvm|mlir|not found'"
record "kiln-info sees the GPU" bash -c "$bundle/bin/kiln-info && $bundle/bin/kiln-info | grep -q 'device cuda:0'"
record "kilnc --list" "$bundle/bin/kilnc" --list
record "kilnc traces softmax" bash -c "$bundle/bin/kilnc --kernel softmax --emit tile | grep -q tile.reduce"
export KILN_CACHE_DIR=$(mktemp -d)
record "unit tests (interpreter)" "$bundle/bin/kiln_unit_tests" --gtest_brief=1
record "GPU tests (GPU vs interpreter)" "$bundle/bin/kiln_gpu_tests" --gtest_brief=1
if command -v compute-sanitizer > /dev/null; then
  # (Tensors past 2^31 elements would take hours under memcheck: sanitize.sh runs them bare.)
  record "GPU tests (compute-sanitizer)" compute-sanitizer --error-exitcode 1 "$bundle/bin/kiln_gpu_tests" --gtest_brief=1 \
    --gtest_filter='-GpuLarge.*'
fi
for example in "$bundle"/bin/example_*; do
  name=$(basename "$example")
  record "$name (GPU)" "$example"
done
if command -v compute-sanitizer > /dev/null; then
  for example in "$bundle"/bin/example_*; do
    name=$(basename "$example")
    # The C ABI example runs on host tensors (the interpreter): no GPU work to check.
    [ "$name" = example_ops_c_api ] && continue
    record "$name (compute-sanitizer)" compute-sanitizer --error-exitcode 1 "$example"
  done
fi

if python3 -c "import torch" 2> /dev/null; then
  record "ops from Python (ctypes, DLPack) vs PyTorch" python3 ops/python/check_with_torch.py "$bundle/lib/libkiln_ops.so" cuda
fi
fi
