# shellcheck shell=bash
# Matmul (sourced by bench/device/run.sh):
#   matmul        the tensor-core GPU tests and matmul_bench against cuBLAS
#                 (MATMUL_SHAPES=llm|square|tf32|all picks the shapes)
#   matmul-op     the op's default against its variants (MATMUL_VERSUS:
#                 configs; default pointer loads and persistent programs),
#                 cuBLAS and Triton
#   matmul-sm80   the op compiled for sm_80 (mma.sync) against cuBLAS, and
#                 mma.sync's own ceiling
#   matmul-peers  the op beside Triton and cuBLAS under do_bench, as the
#                 bar's peer numbers were measured, and the SASS of both
#                 mma.sync K loops
#   profile-matmul  Kiln's op, Triton with the same tile and cuBLAS at 4096^3
#                 bf16, timed and under Nsight Compute, with the SASS of both
#   matmul-fp8-grouped  the fp8 (tensor, row-wise and block scales) and
#                 grouped GPU tests, then the op beside torch._scaled_mm and
#                 the grouped op beside torch._grouped_mm /
#                 torch._scaled_grouped_mm

case "$part" in
matmul-fp8-grouped)
  export KILN_CACHE_DIR=$(mktemp -d)
  command="bash bench/device/run.sh (bundle from scripts/device-bundle.sh at $(cat "$bundle/REVISION" 2>/dev/null)) matmul-fp8-grouped"
  record "fp8 and grouped matmul GPU tests (vs interpreter)" timeout 300 "$bundle/bin/kiln_gpu_tests" --gtest_brief=1 \
    --gtest_filter='GpuOps.MatmulOfFp8*:GpuOps.GroupedMatmul*:GpuMatmul.Fp8*'
  record "fp8 matmul vs torch._scaled_mm" timeout 240 python3 bench/matmul_fp8_vs_torch.py \
    "$bundle/lib/libkiln_ops.so" "$out/matmul-fp8-records.json" "$command"
  record "grouped matmul vs torch._grouped_mm" timeout 180 python3 bench/grouped_matmul_vs_torch.py \
    "$bundle/lib/libkiln_ops.so" "$out/grouped-matmul-records.json" "$command"
  grep "^|" "$log" > "$out/tables.md"
  ;;
matmul)
  export KILN_CACHE_DIR=$(mktemp -d)
  record "matmul GPU tests (vs double reference)" "$bundle/bin/kiln_gpu_tests" --gtest_brief=1 \
    --gtest_filter='GpuMatmul*:*Dot*'
  record "matmul benchmark vs cuBLAS" "$bundle/bin/matmul_bench" --shapes "${MATMUL_SHAPES:-all}" \
    --records "$out/matmul-records.json" \
    --command "bash bench/device/run.sh (bundle from scripts/device-bundle.sh at $(cat "$bundle/REVISION" 2>/dev/null)) matmul"
  sed -n '/^shape (MxNxK)/,$p' "$log" > "$out/matmul-table.md"
  ;;
matmul-op)
  # The matmul op's default (tensor descriptors: the copy engine on Hopper)
  # against its pointer loads, persistent programs and cuBLAS: the
  # tensor-core and op GPU tests, the matmul example, matmul_bench --op-only on MATMUL_SHAPES (square),
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
  ;;
matmul-sm80)
  # The op compiled for sm_80 on a Hopper GPU (mma.sync, ldmatrix, cp.async
  # rings; it plans for that target) against cuBLAS, with its best mma.sync
  # tile beside the default; and the ceiling of mma.sync itself (operands in
  # registers).
  export KILN_CACHE_DIR=$(mktemp -d)
  if [ -x "$bundle/bin/mma_sync_peak" ]; then
    record "mma.sync ceiling" bash -c "'$bundle/bin/mma_sync_peak' | tee '$out/mma-sync-peak.md'"
  fi
  tile=BLOCK_M=128,BLOCK_N=128,BLOCK_K=64,num_warps=4,num_stages=3
  record "matmul op on mma.sync (KILN_TARGET=sm_80) vs cuBLAS" env KILN_TARGET=sm_80 timeout 240 \
    "$bundle/bin/matmul_bench" --op-only --shapes "${MATMUL_SHAPES:-square}" --versus "$tile" \
    --records "$out/matmul-sm80-records.json" \
    --command "bash bench/device/run.sh (bundle from scripts/device-bundle.sh at $(cat "$bundle/REVISION" 2>/dev/null)) matmul-sm80"
  sed -n '/^the ops library/,$p' "$log" > "$out/matmul-sm80-table.md"
  ;;
matmul-peers)
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
  ;;
profile-matmul)
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
  ;;
esac
