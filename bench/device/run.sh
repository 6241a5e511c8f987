#!/usr/bin/env bash
# Runs on the GPU machine from a bundle made by scripts/device-bundle.sh:
# proves the statically linked tools run there, runs the GPU tests and the
# examples on the GPU, and writes a results table to $OUT/results.md (and
# the full log to $OUT/device.log). Each kind of run is one script under
# bench/device/runs/ (checks, memory, ops, tutorial, matmul, tune), which
# this one dispatches to.
#   bash bench/device/run.sh .device/bundle [checks|benchmarks|ops|tutorial|matmul|matmul-op|matmul-stage1|matmul-peers|matmul-pinned|tune-matmul|norm-occupancy|profile-matmul|all]
# (matmul: the tensor-core tests and the matmul benchmark against cuBLAS;
# MATMUL_SHAPES=llm|square|tf32|all picks its shapes; matmul-op: the op's
# copy-engine loads against its pointer loads (or the configs in
# MATMUL_VERSUS), cuBLAS and Triton; matmul-stage1: the op on mma.sync
# (KILN_TARGET=sm_80) against cuBLAS, and mma.sync's ceiling; matmul-peers:
# both stages beside Triton and cuBLAS under do_bench, as the bar's peer
# numbers were measured; matmul-pinned: the op with the configs in PINNED
# (default: the 128x256 schedule without and with clusters of two), so
# timed; norm-occupancy: the
# 16384x8192 normalizations against torch.compile with the default plans,
# then with plans asking for 4 programs a multiprocessor; profile-matmul:
# Kiln's matmul op, Triton with the same tile and cuBLAS at 4096^3 bf16,
# timed, under Nsight Compute, and the SASS of both DSL kernels)
# (one device call holds at most 10 minutes: run the two parts apart when
# both do not fit).
set -uo pipefail
bundle=${1:-.device/bundle}
part=${2:-all}
out=${OUT:-/tmp/kiln-device-out}
mkdir -p "$out"
log="$out/device.log"
: > "$log"
results="$out/results.md"
echo "| check | result |" > "$results"
echo "| --- | --- |" >> "$results"

record() { # name, command...
  local name=$1
  shift
  echo "== $name: $*" | tee -a "$log"
  if "$@" >> "$log" 2>&1; then
    echo "| $name | pass |" >> "$results"
  else
    echo "| $name | FAIL (exit $?) |" >> "$results"
  fi
}

{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1
  uname -srm
  echo "ptxas: $(command -v ptxas || ls /usr/local/cuda/bin/ptxas 2>/dev/null) $(ptxas --version 2>/dev/null | tail -1)"
  echo "compute-sanitizer: $(command -v compute-sanitizer || echo none)"
} | tee -a "$log"

# One script per kind of run, sourced here (they share $bundle, $out,
# $log, $results and record).
here=$(dirname "${BASH_SOURCE[0]}")/runs
case "$part" in
  checks) kinds=(checks) ;;
  benchmarks) kinds=(memory) ;;
  ops | norm-occupancy) kinds=(ops) ;;
  tutorial) kinds=(tutorial) ;;
  matmul | matmul-op | matmul-stage1 | matmul-peers | matmul-pinned | profile-matmul) kinds=(matmul) ;;
  tune-matmul) kinds=(tune) ;;
  all) kinds=(checks memory ops) ;;
  *)
    echo "run.sh: no part '$part' (checks, benchmarks, ops, tutorial, matmul, matmul-op, matmul-stage1," \
      "matmul-peers, matmul-pinned, profile-matmul, tune-matmul, norm-occupancy or all)" >&2
    exit 2
    ;;
esac
for kind in "${kinds[@]}"; do
  # shellcheck source=/dev/null
  source "$here/$kind.sh"
done

echo
cat "$results"
[ -f "$out/memory-table.md" ] && cat "$out/memory-table.md"
[ -f "$out/ops-table.md" ] && cat "$out/ops-table.md"
# The exit status says whether every check passed (not whether a table exists).
! grep -q "| FAIL" "$results"
