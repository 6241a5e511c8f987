# shellcheck shell=bash
# Triton's tutorial kernels written in Kiln beside the same kernels in
# Triton (sourced by bench/device/run.sh for: tutorial).

if [ "$part" = tutorial ]; then
  # Triton's tutorial kernels written in Kiln against the same kernels in
  # Triton, one timer (bench/tutorial_vs_triton.py; TUTORIAL_FILTER, a
  # substring, runs a subset), and the tutorial kernels' GPU tests.
  command="bash bench/device/run.sh (bundle from scripts/device-bundle.sh at $(cat "$bundle/REVISION" 2>/dev/null)) tutorial"
  export KILN_CACHE_DIR=$(mktemp -d)
  record "tutorial kernels: GPU tests" "$bundle/bin/kiln_gpu_tests" --gtest_brief=1 --gtest_filter='GpuTutorial.*'
  record "tutorial kernels: Kiln vs Triton, one timer" python3 bench/tutorial_vs_triton.py \
    "$bundle/lib/libkiln_tutorial.so" "$out/tutorial-vs-triton.json" "$command" "${TUTORIAL_FILTER:-}"
  sed -n '/^| kernel | unit | Kiln | Triton/,$p' "$log" | grep '^|' > "$out/tutorial-table.md"
fi
