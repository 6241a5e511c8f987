#!/usr/bin/env bash
# Runs on the GPU machine from a bundle made by scripts/device-bundle.sh:
# proves the statically linked tools run there, runs the GPU tests and the
# examples on the GPU, and writes a results table to $OUT/results.md (and
# the full log to $OUT/device.log).
#   bash bench/device/run.sh .device/bundle [part]
# Each kind of run is one script under bench/device/runs/, whose head says
# what its parts do: checks.sh (checks), memory.sh (benchmarks), ops.sh
# (ops), tutorial.sh (tutorial: Triton's tutorial kernels, attention
# included, beside Triton), attention.sh (attention: the op beside cuDNN
# and FlashAttention; attention-backward; profile-attention), matmul.sh (matmul, matmul-op, matmul-sm80,
# matmul-peers, profile-matmul, matmul-fp8-grouped), tune.sh (tune-matmul, tune-norms, tune-attention); `all`
# runs checks, benchmarks and ops. One device call holds at most 10
# minutes: run parts apart when they do not fit together.
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
  ops) kinds=(ops) ;;
  tutorial) kinds=(tutorial) ;;
  attention | attention-backward | profile-attention) kinds=(attention) ;;
  matmul | matmul-op | matmul-sm80 | matmul-peers | profile-matmul | matmul-fp8-grouped) kinds=(matmul) ;;
  tune-matmul | tune-norms | tune-attention) kinds=(tune) ;;
  all) kinds=(checks memory ops) ;;
  *)
    echo "run.sh: no part '$part' (checks, benchmarks, ops, tutorial, attention, attention-backward, profile-attention, matmul, matmul-op," \
      "matmul-sm80, matmul-peers, profile-matmul, matmul-fp8-grouped, tune-matmul, tune-norms, tune-attention or all)" >&2
    exit 2
    ;;
esac
for kind in "${kinds[@]}"; do
  # shellcheck source=/dev/null
  source "$here/$kind.sh"
done

echo
cat "$results"
for table in "$out"/*-table.md; do
  [ -f "$table" ] && cat "$table"
done
# The exit status says whether every check passed (not whether a table exists).
! grep -q "| FAIL" "$results"
