#!/usr/bin/env bash
# Runs on the GPU machine from a bundle made by scripts/device-bundle.sh:
# compute-sanitizer's memcheck, racecheck and synccheck over the GPU tests
# that run each matmul schedule (pointer loads, copy-engine descriptors,
# persistent and warp-specialized programs, clusters) and the
# normalizations and reductions; then the tensors past 2^31 elements
# (GpuLarge, unsanitized: memcheck would take hours on 4 GiB tensors).
# Writes $OUT/sanitize.md (one row per tool and group) and $OUT/sanitize.log.
#   bash bench/device/sanitize.sh .device/bundle
set -uo pipefail
bundle=${1:-.device/bundle}
out=${OUT:-/tmp/kiln-device-out}
mkdir -p "$out"
log="$out/sanitize.log"
table="$out/sanitize.md"
: > "$log"
tests="$bundle/bin/kiln_gpu_tests"
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2> /dev/null)

{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
  echo "bundle: $(cat "$bundle/REVISION" 2> /dev/null)"
  echo "compute-sanitizer: ${sanitizer:-none} $($sanitizer --version 2> /dev/null | tail -1)"
} | tee -a "$log"
echo "| tool | tests | result |" > "$table"
echo "| --- | --- | --- |" >> "$table"

# The groups: what each filter runs.
declare -A groups=(
  [matmul]='GpuMatmul.*:GpuOps.Matmul*:GpuKernels.DotsOfEveryOperandType:GpuKernels.ClustersNumberTheirPrograms'
  [normalizations]='GpuOps.NormalizationsInBothPlans:GpuOps.ReductionsAlongRowsColumnsAndSplits:GpuOps.FusedPointwiseAtOddShapesAndStrides'
)
status=0
for tool in memcheck racecheck synccheck; do
  for group in matmul normalizations; do
    echo "== $tool: $group (${groups[$group]})" | tee -a "$log"
    start=$(date +%s)
    # Tuning tests time many configs: sanitizing them adds nothing the
    # fixed-config tests do not cover, at many times the cost.
    "$sanitizer" --tool "$tool" --error-exitcode 1 "$tests" --gtest_brief=1 \
      --gtest_filter="${groups[$group]}:-*Tuning*:*Autotunes*" >> "$log" 2>&1
    rc=$?
    summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1)
    passed=$(grep -E "^\[  PASSED  \]" "$log" | tail -1)
    if [ $rc -eq 0 ]; then
      echo "| $tool | $group | pass: ${summary:-no summary}; ${passed} ($(($(date +%s) - start)) s) |" >> "$table"
    else
      echo "| $tool | $group | FAIL (exit $rc): ${summary:-no summary} |" >> "$table"
      status=1
    fi
  done
done

echo "== tensors past 2^31 elements" | tee -a "$log"
start=$(date +%s)
if "$tests" --gtest_brief=1 --gtest_filter='GpuLarge.*' >> "$log" 2>&1; then
  echo "| (none) | GpuLarge: pointwise, reductions, norms, matmul past 2^31 elements | pass ($(($(date +%s) - start)) s) |" >> "$table"
else
  echo "| (none) | GpuLarge | FAIL |" >> "$table"
  status=1
fi
cat "$table"
exit $status
