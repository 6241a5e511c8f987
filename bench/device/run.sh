#!/usr/bin/env bash
# Runs on the GPU machine from a bundle made by scripts/device-bundle.sh:
# proves the statically linked tools run there, runs the GPU tests and the
# examples on the GPU, and writes a results table to $OUT/results.md (and
# the full log to $OUT/device.log).
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
  cat "$results" "$out/tutorial-table.md"
  ! grep -q "| FAIL" "$results"
  exit
fi

if [ "$part" = tune-matmul ]; then
  # The autotuner on the matmul op (4096^3 bf16): 5 configs end to end from
  # a fresh store, a second process with the warm store, Triton's autotuner
  # on the same 5 tiles; then the whole space exhaustively and by pattern
  # search (each from a fresh store); the op from Python; its GPU tests.
  tune=("$bundle/bin/autotune" --op matmul --m 4096 --n 4096 --k 4096 --dtype bf16)
  five=()
  for c in BLOCK_M=128,BLOCK_N=128,BLOCK_K=64,num_warps=4,num_stages=3 BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,num_warps=8,num_stages=3 \
           BLOCK_M=128,BLOCK_N=128,BLOCK_K=32,num_warps=4,num_stages=4 BLOCK_M=64,BLOCK_N=128,BLOCK_K=64,num_warps=4,num_stages=4 \
           BLOCK_M=256,BLOCK_N=128,BLOCK_K=32,num_warps=8,num_stages=4; do
    five+=(--config "$c,GROUP_M=8")
  done
  export KILN_CACHE_DIR=$(mktemp -d)
  record "autotune: 5 matmul configs, fresh store" bash -c 'start=$(date +%s%N); "$@"; echo "wall: $(( ($(date +%s%N) - start) / 1000000 )) ms"' _ "${tune[@]}" "${five[@]}"
  record "autotune: the same, second process (warm store)" bash -c 'start=$(date +%s%N); "$@"; echo "wall: $(( ($(date +%s%N) - start) / 1000000 )) ms"' _ "${tune[@]}" "${five[@]}"
  record "Triton's autotuner: the same 5 tiles" python3 bench/device/triton_matmul_autotune.py
  export KILN_CACHE_DIR=$(mktemp -d)
  record "autotune: whole space, exhaustive" bash -c '"$@" --strategy exhaustive --json > '"$out"'/matmul-exhaustive.json' _ "${tune[@]}"
  export KILN_CACHE_DIR=$(mktemp -d)
  record "autotune: whole space, pattern search" bash -c '"$@" --strategy pattern --json > '"$out"'/matmul-pattern.json' _ "${tune[@]}"
  record "matmul op GPU tests" "$bundle/bin/kiln_gpu_tests" --gtest_brief=1 --gtest_filter='GpuOps.Matmul*'
  if python3 -c "import torch" 2> /dev/null; then
    record "ops from Python (ctypes, DLPack) vs PyTorch" python3 ops/python/check_with_torch.py "$bundle/lib/libkiln_ops.so" cuda
  fi
  cat "$results"
  exit 0
fi

if [ "$part" = norm-occupancy ]; then
  # The same ops_vs_torch.py run twice, each from a fresh tuning store: the
  # default plans, then plans that set min_blocks_per_sm=4 (stored by
  # autotune --config, which library calls then use); and the defaults
  # again, for the spread between runs.
  lib="$bundle/lib/libkiln_ops.so"
  plan=BLOCK_M=1,BLOCK_N=8192,num_warps=16,ONE_PASS=1
  command="bash bench/device/run.sh (bundle from scripts/device-bundle.sh at $(cat "$bundle/REVISION" 2>/dev/null)) norm-occupancy"
  export KILN_CACHE_DIR=$(mktemp -d)
  record "ops vs torch, default plans" python3 bench/ops_vs_torch.py "$lib" "$out/defaults.json" "$command" 16384x8192
  export KILN_CACHE_DIR=$(mktemp -d)
  for op in layer_norm rms_norm; do
    for dtype in f32 bf16; do
      record "autotune stores $op $dtype with 4 programs a multiprocessor" "$bundle/bin/autotune" --op $op \
        --rows 16384 --cols 8192 --dtype $dtype --config "$plan,min_blocks_per_sm=4"
    done
  done
  record "ops vs torch, min_blocks_per_sm=4" python3 bench/ops_vs_torch.py "$lib" "$out/four-programs.json" "$command" 16384x8192
  export KILN_CACHE_DIR=$(mktemp -d)
  record "ops vs torch, default plans again" python3 bench/ops_vs_torch.py "$lib" "$out/defaults-again.json" "$command" 16384x8192
  grep "^|" "$log" > "$out/tables.md"
  cat "$results"
  exit 0
fi

if [ "$part" = profile-matmul ]; then
  lib="$bundle/lib/libkiln_ops.so"
  export KILN_CACHE_DIR=$(mktemp -d) KILN_DUMP_DIR="$out/kiln-dump" TRITON_CACHE_DIR="$out/triton-cache"
  for order in kn nk; do
    record "matmul 4096^3 bf16 B $order: Kiln, Triton, cuBLAS" python3 bench/device/profile_matmul.py "$lib" 4096 4096 4096 $order
  done
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
  for order in kn nk; do
    record "Nsight Compute, B $order" "$ncu" --profile-from-start off --section SpeedOfLight --section ComputeWorkloadAnalysis \
      --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
      --section MemoryWorkloadAnalysis --section InstructionStats --metrics smsp__inst_executed.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
      python3 bench/device/profile_matmul.py "$lib" 4096 4096 4096 $order
  done
  # Kiln's dump holds its SASS already; Triton's cache holds a cubin. One
  # archive, as the device tool returns neither deep folders nor many files.
  for cubin in $(find "$out/triton-cache" -name '*.cubin' 2>/dev/null); do
    cuobjdump -sass "$cubin" > "$cubin.sass" 2>&1 || true
  done
  tar czf "$out/kernels.tgz" -C "$out" kiln-dump triton-cache && rm -rf "$out/kiln-dump" "$out/triton-cache"
  grep "^|" "$log" > "$out/tables.md"
  cat "$results"
  exit 0
fi

if [ "$part" = matmul-op ]; then
  # The matmul op's default (tensor descriptors: the copy engine on Hopper)
  # against its pointer loads, persistent programs and cuBLAS: the tensor-core and op GPU tests,
  # the matmul example, matmul_bench --op-only on MATMUL_SHAPES (square),
  # then Kiln's op, Triton and cuBLAS at 4096^3 bf16 for both B orders.
  # Each step has a time limit: a copy-engine wait that never completes
  # hangs rather than fails.
  export KILN_CACHE_DIR=$(mktemp -d)
  command="bash bench/device/run.sh (bundle from scripts/device-bundle.sh at $(cat "$bundle/REVISION" 2>/dev/null)) matmul-op"
  record "matmul and dot GPU tests (vs interpreter and double reference)" timeout 300 "$bundle/bin/kiln_gpu_tests" \
    --gtest_brief=1 --gtest_filter='GpuMatmul*:*Dot*:GpuOps.Matmul*'
  record "example_matmul (GPU)" timeout 120 "$bundle/bin/example_matmul"
  # MATMUL_VERSUS: the variants timed beside the defaults (space-separated configs).
  versus=()
  for v in ${MATMUL_VERSUS:-DESCRIPTORS=0 PERSISTENT=1}; do
    versus+=(--versus "$v")
  done
  record "matmul op vs its variants (${MATMUL_VERSUS:-DESCRIPTORS=0 PERSISTENT=1}), cuBLAS" timeout 240 \
    "$bundle/bin/matmul_bench" --op-only "${versus[@]}" --shapes "${MATMUL_SHAPES:-square}" \
    --records "$out/matmul-op-records.json" --command "$command${MATMUL_VERSUS:+ (MATMUL_VERSUS=$MATMUL_VERSUS)}"
  sed -n '/^the ops library/,$p' "$log" > "$out/matmul-op-table.md"
  for order in kn nk; do
    record "matmul 4096^3 bf16 B $order: Kiln, Triton, cuBLAS" timeout 120 python3 bench/device/profile_matmul.py \
      "$bundle/lib/libkiln_ops.so" 4096 4096 4096 $order
  done
  grep "^|" "$log" > "$out/tables.md"
  cat "$results"
  exit 0
fi

if [ "$part" = matmul-stage1 ]; then
  # Stage 1 of issue 8 on a Hopper GPU: the op compiled for sm_80
  # (mma.sync, ldmatrix, cp.async rings; it plans for that target) against
  # cuBLAS, with its best mma.sync tile beside the default; and the ceiling
  # of mma.sync itself (operands in registers).
  export KILN_CACHE_DIR=$(mktemp -d)
  if [ -x "$bundle/bin/mma_sync_peak" ]; then
    record "mma.sync ceiling" bash -c "'$bundle/bin/mma_sync_peak' | tee '$out/mma-sync-peak.md'"
  fi
  tile=BLOCK_M=128,BLOCK_N=128,BLOCK_K=64,num_warps=4,num_stages=3
  record "matmul op on mma.sync (KILN_TARGET=sm_80) vs cuBLAS" env KILN_TARGET=sm_80 timeout 240 \
    "$bundle/bin/matmul_bench" --op-only --shapes "${MATMUL_SHAPES:-square}" --versus "$tile" \
    --records "$out/matmul-stage1-records.json" \
    --command "bash bench/device/run.sh (bundle from scripts/device-bundle.sh at $(cat "$bundle/REVISION" 2>/dev/null)) matmul-stage1"
  sed -n '/^the ops library/,$p' "$log" > "$out/matmul-stage1-table.md"
  cat "$results"
  exit 0
fi

if [ "$part" = matmul-pinned ]; then
  # The op with given configs, timed as the bar's peers were. Each config in
  # PINNED (space-separated; default: the 128x256 persistent schedule without
  # and with clusters of two sharing B's copies) is pinned as the tuned
  # config of every shape in a store of its own (autotune --config, which
  # also checks its output against the default tile's); then the op is timed
  # from Python beside cuBLAS (do_bench; B [K][N], the layout autotune
  # tunes), the stores in turn, PINNED_RUNS times.
  lib="$bundle/lib/libkiln_ops.so"
  tile=BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,GROUP_M=16,num_warps=8,num_stages=3,SPLIT_K=1,PERSISTENT=1,warp_specialize=1
  read -r -a pinned <<< "${PINNED:-$tile,cluster_size=1 $tile,cluster_size=2}"
  shapes=${PINNED_SHAPES:-4096x4096x4096,8192x8192x8192,4096x11008x4096}
  stores=()
  for config in "${pinned[@]}"; do
    store=$(mktemp -d)
    stores+=("$store")
    for shape in ${shapes//,/ }; do
      IFS=x read -r m n k <<< "$shape"
      KILN_CACHE_DIR=$store record "pin $config at $shape" \
        "$bundle/bin/autotune" --op matmul --m "$m" --n "$n" --k "$k" --dtype bf16 --config "$config"
    done
  done
  for run in $(seq "${PINNED_RUNS:-2}"); do
    for i in "${!pinned[@]}"; do
      echo "== run $run, ${pinned[$i]}" | tee -a "$log"
      KILN_CACHE_DIR=${stores[$i]} KILN_PRINT_AUTOTUNING=1 timeout 200 python3 bench/device/matmul_peers.py "$lib" \
        --b kn --no-triton --rounds "${PINNED_ROUNDS:-5}" --shapes "$shapes" 2>&1 | tee -a "$log" |
        grep -E "medians over|WRONG|config|Error|error" | sed "s/^/${pinned[$i]}: /" | tee -a "$results"
    done
  done
  echo "results: $results; log: $log"
  exit 0
fi

if [ "$part" = matmul-peers ]; then
  # The op beside Triton and cuBLAS, timed as the bar's peer numbers were
  # (do_bench's median; bench/device/matmul_peers.py): stage 1 (Kiln's op on
  # mma.sync against Triton's own mma.sync path) and stage 2 (both as they
  # plan for Hopper) at 4096^3 for both B orders and at 8192^3, stage 2 on
  # the LLM shapes against cuBLAS; then both stage-1 kernels' SASS for
  # sm_90a (Kiln's sm_80 PTX through this machine's ptxas, as the driver
  # would, and Triton's cubin) and the weight of their K loops.
  export KILN_CACHE_DIR=$(mktemp -d)
  lib="$bundle/lib/libkiln_ops.so"
  peers=(timeout 240 python3 bench/device/matmul_peers.py "$lib")
  dump=$(mktemp -d)
  for stage in 1 2; do
    record "stage $stage: Kiln, Triton, cuBLAS (4096^3, B [N][K])" env KILN_DUMP_DIR="$dump/$stage" \
      "${peers[@]}" --stage $stage --rounds 7 --keep-kernel "$out"
    record "stage $stage: Kiln, Triton, cuBLAS (4096^3, B [K][N])" "${peers[@]}" --stage $stage --b kn
    record "stage $stage: Kiln, Triton, cuBLAS (8192^3, B [N][K])" "${peers[@]}" --stage $stage --shapes 8192x8192x8192 --rounds 3
  done
  llm=$(for m in 16 128 4096; do for nk in 4096x4096 11008x4096 4096x11008; do printf "%s," "${m}x$nk"; done; done)
  record "stage 2: Kiln, cuBLAS (LLM shapes, B [N][K])" "${peers[@]}" --no-triton --shapes "${llm%,}" --rounds 3
  ptx=$(find "$dump/1" -name '5-kernel.ptx' -path '*kiln_matmul*' | head -1)
  if [ -n "$ptx" ] && [ -f "$out/triton-stage1.cubin" ]; then
    cp "$ptx" "$out/kiln-stage1.ptx"
    ptxas -arch=sm_90a -O3 -v "$ptx" -o "$out/kiln-stage1.cubin" >> "$log" 2>&1
    for kernel in kiln triton; do
      cuobjdump -sass "$out/$kernel-stage1.cubin" > "$out/$kernel-stage1.sass" 2>&1
      record "SASS loops: $kernel stage 1" python3 bench/device/sass_loops.py "$out/$kernel-stage1.sass"
    done
  fi
  (cd "$out" && tar czf kernels.tgz --remove-files *-stage?.* 2> /dev/null)
  grep "^|\|^medians\|^Triton's\|^[0-9]*x[0-9]*x\|loop 0x\|^    [A-Z]" "$log" > "$out/tables.md"
  cat "$results"
  exit 0
fi

if [ "$part" = matmul ]; then
  export KILN_CACHE_DIR=$(mktemp -d)
  record "matmul GPU tests (vs double reference)" "$bundle/bin/kiln_gpu_tests" --gtest_brief=1 \
    --gtest_filter='GpuMatmul*:*Dot*'
  record "matmul benchmark vs cuBLAS" "$bundle/bin/matmul_bench" --shapes "${MATMUL_SHAPES:-all}" \
    --records "$out/matmul-records.json" \
    --command "bash bench/device/run.sh (bundle from scripts/device-bundle.sh at $(cat "$bundle/REVISION" 2>/dev/null)) matmul"
  sed -n '/^shape (MxNxK)/,$p' "$log" > "$out/matmul-table.md"
  # MATMUL_PROFILE=1: the SASS of each variant and Nsight Compute's view of
  # one 4096^3 bf16 launch (stall reasons, pipe utilization).
  if [ -n "${MATMUL_PROFILE:-}" ]; then
    KILN_DUMP_DIR="$out/dump" "$bundle/bin/matmul_bench" --shapes square --reps 3 > /dev/null 2>&1
    ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
    [ -n "$ncu" ] && "$ncu" --kernel-name regex:bench_matmul_bf16 --launch-count 1 --section SpeedOfLight \
      --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy \
      --section MemoryWorkloadAnalysis "$bundle/bin/matmul_bench" --shapes square --reps 1 > "$out/ncu.txt" 2>&1
  fi
  cat "$results"
  exit 0
fi

if [ "$part" = checks ] || [ "$part" = all ]; then
record "libkiln.so needs no LLVM" bash -c "! ldd $bundle/lib/libkiln.so | grep -qiE 'llvm|mlir|not found'"
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

# ops (or all): the ops library through its C ABI against torch.compile,
# eager PyTorch and a copy, under one timer (about 3 minutes).
if [ "$part" = ops ] || [ "$part" = all ]; then
  command="bash bench/device/run.sh (bundle from scripts/device-bundle.sh at $(cat "$bundle/REVISION" 2>/dev/null)) ops"
  export KILN_CACHE_DIR=$(mktemp -d)
  record "ops vs PyTorch, one timer" python3 bench/ops_vs_torch.py "$bundle/lib/libkiln_ops.so" \
    "$out/ops-vs-torch.json" "$command"
  sed -n '/^| workload | Kiln | torch.compile/,$p' "$log" > "$out/ops-table.md"
fi

echo
cat "$results"
[ -f "$out/memory-table.md" ] && cat "$out/memory-table.md"
[ -f "$out/ops-table.md" ] && cat "$out/ops-table.md"
# The exit status says whether every check passed (not whether a table exists).
! grep -q "| FAIL" "$results"
