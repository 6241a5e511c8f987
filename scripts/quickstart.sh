#!/usr/bin/env bash
# Quick start: install what Kiln needs (Debian 12), build it, and run the
# main job: every example kernel on random inputs, checked against a
# double-precision reference -- on the GPU when there is one, else on the
# CPU interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake -S . -B build -G Ninja
cmake --build build

echo
echo "== Example kernels (device: GPU if present, else the interpreter; KILN_INTERPRET=1 forces it)"
status=0
for example in vector_add fused_gelu softmax layer_norm matmul attention ops_c_api; do
  build/bin/example_${example} || status=1
done
echo
if [ $status -eq 0 ]; then
  echo "All examples match their references."
else
  echo "Some examples did not match their references." >&2
fi
exit $status
