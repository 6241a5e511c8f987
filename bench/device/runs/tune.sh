# shellcheck shell=bash
# The autotuner (sourced by bench/device/run.sh):
#   tune-matmul  the matmul op tuned, beside Triton's autotuner
#   tune-norms   the normalizations tuned on the benchmark shapes, tuned
#                again (a warm store: nothing compiled or timed), then timed
#                with their tuned plans beside a device copy
#   tune-attention  attention tuned for a long and a decoding shape, then
#                timed with the tuned tiles beside PyTorch

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
fi

if [ "$part" = tune-norms ]; then
  # Each normalization in f32 and bf16 at 16384x8192 and 4096x32768, tuned
  # from a fresh store; softmax again (everything stored: it compiles and
  # times nothing); then memory_bench with the tuned plans beside a copy.
  export KILN_CACHE_DIR=$(mktemp -d)
  for op in softmax layer_norm rms_norm; do
    for dtype in f32 bf16; do
      for shape in 16384x8192 4096x32768; do
        IFS=x read -r rows cols <<< "$shape"
        record "autotune $op $dtype $shape" bash -c '"$@" > "'"$out/tune-$op-$dtype-$shape.txt"'" 2>&1' _ \
          "$bundle/bin/autotune" --op "$op" --rows "$rows" --cols "$cols" --dtype "$dtype" --reps 10
        grep -E '^best:|configs in the space' "$out/tune-$op-$dtype-$shape.txt" | sed "s/^/$op $dtype $shape: /" >> "$log"
      done
    done
  done
  record "autotune softmax bf16 16384x8192 again (warm store)" "$bundle/bin/autotune" --op softmax --rows 16384 \
    --cols 8192 --dtype bf16 --reps 10
  record "ops with their tuned plans vs a copy" "$bundle/bin/memory_bench" \
    --benchmark_filter='^ops (softmax|layer norm|rms norm) (f32|bf16) (16384x8192|4096x32768)/|cuMemcpy' \
    --records "$out/tuned-records.json" \
    --command "bash bench/device/run.sh (bundle from scripts/device-bundle.sh at $(cat "$bundle/REVISION" 2>/dev/null)) tune-norms"
fi

if [ "$part" = tune-attention ]; then
  # Attention tuned from a fresh store for the long shape (B 4, H 32, N
  # 4096, D 128, full and causal) and for decoding on grouped heads (B 64,
  # 32 query heads on 8, one query over 4096 keys), then the attention
  # benchmark on those shapes with the tuned tiles (the same store).
  export KILN_CACHE_DIR=$(mktemp -d)
  for shape in "--seq 4096" "--seq 4096 --causal" "--seq 1 --seq-k 4096 --kv-heads 8 --batch 64"; do
    name=$(echo "$shape" | tr -d '-' | tr ' ' '_')
    # shellcheck disable=SC2086
    record "autotune attention $shape" bash -c '"$@" > "'"$out/tune-attention-$name.txt"'" 2>&1' _ \
      "$bundle/bin/autotune" --op attention --batch 4 --heads 32 --head-dim 128 $shape --reps 10
    grep -E '^best:|configs in the space' "$out/tune-attention-$name.txt" | sed "s/^/attention $shape: /" >> "$log"
  done
  command="bash bench/device/run.sh (bundle from scripts/device-bundle.sh at $(cat "$bundle/REVISION" 2>/dev/null)) tune-attention"
  record "attention with the tuned tiles vs cuDNN and FlashAttention" python3 bench/attention_vs_torch.py \
    "$bundle/lib/libkiln_ops.so" "$out/attention-tuned-vs-torch.json" "$command" "${ATTENTION_FILTER:-N 4096 D 128}"
  sed -n '/^| workload | Kiln | cuDNN/,$p' "$log" | grep '^|' > "$out/attention-tuned-table.md"
fi
