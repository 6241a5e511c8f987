# shellcheck shell=bash
# The memory-bound benchmarks beside PyTorch and Triton in the same run
# (sourced by bench/device/run.sh for: benchmarks, all).

if [ "$part" = benchmarks ] || [ "$part" = all ]; then
command="bash bench/device/run.sh (bundle from scripts/device-bundle.sh at $(cat "$bundle/REVISION" 2>/dev/null))"
# BENCH_FILTER (a regular expression over benchmark names) runs a subset.
record "memory benchmarks" "$bundle/bin/memory_bench" --benchmark_filter="${BENCH_FILTER:-.}" \
  --records "$out/memory-records.json" --command "$command${BENCH_FILTER:+ (BENCH_FILTER=$BENCH_FILTER)}"
if python3 -c "import torch, triton" 2> /dev/null; then
  record "PyTorch and Triton in the same run" python3 bench/compare.py "$out/memory-records.json" \
    "$out/memory-peers.json" "$command"
  sed -n '/^| workload | metric/,$p' "$log" > "$out/memory-table.md"
fi
fi
