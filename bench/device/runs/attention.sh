# shellcheck shell=bash
# The attention op (sourced by bench/device/run.sh for: attention): its GPU
# tests against the interpreter, then the op beside PyTorch's
# scaled_dot_product_attention on cuDNN and FlashAttention, one timer
# (bench/attention_vs_torch.py; ATTENTION_FILTER, a substring, runs a subset).
# attention-backward: the backward pass's and the modifiers' GPU tests, then
# the backward beside SDPA's on cuDNN and FlashAttention
# (bench/attention_backward_vs_torch.py) and the modifiers beside Kiln's
# built-in variants and flex_attention (bench/attention_modifiers_vs_flex.py).
# profile-attention: the op and cuDNN on a short and a long walk of keys
# (bench/device/profile_attention.py; ATTENTION_PROBLEMS, "B H N D causal"
# groups, picks others), timed and then under Nsight Compute.

if [ "$part" = attention ]; then
  command="bash bench/device/run.sh (bundle from scripts/device-bundle.sh at $(cat "$bundle/REVISION" 2>/dev/null)) attention"
  export KILN_CACHE_DIR=$(mktemp -d)
  record "attention: GPU tests (vs interpreter)" "$bundle/bin/kiln_gpu_tests" --gtest_brief=1 \
    --gtest_filter='GpuOps.Attention*'
  record "attention: Kiln vs cuDNN and FlashAttention, one timer" python3 bench/attention_vs_torch.py \
    "$bundle/lib/libkiln_ops.so" "$out/attention-vs-torch.json" "$command" "${ATTENTION_FILTER:-}"
  sed -n '/^| workload | Kiln | cuDNN/,$p' "$log" | grep '^|' > "$out/attention-table.md"
fi

if [ "$part" = attention-backward ]; then
  command="bash bench/device/run.sh (bundle from scripts/device-bundle.sh at $(cat "$bundle/REVISION" 2>/dev/null)) attention-backward"
  export KILN_CACHE_DIR=$(mktemp -d)
  record "attention backward: GPU tests (vs interpreter)" timeout 300 "$bundle/bin/kiln_gpu_tests" --gtest_brief=1 \
    --gtest_filter='GpuOps.AttentionBackward*:GpuOps.AttentionWithModifiers'
  record "attention backward: Kiln vs cuDNN and FlashAttention, one timer" timeout 300 python3 \
    bench/attention_backward_vs_torch.py "$bundle/lib/libkiln_ops.so" "$out/attention-backward-vs-torch.json" \
    "$command" "${ATTENTION_FILTER:-}"
  record "attention modifiers: Kiln vs its built-in variants and flex_attention" timeout 200 python3 \
    bench/attention_modifiers_vs_flex.py "$bundle/lib/libkiln_ops.so" "$out/attention-modifiers-vs-flex.json" \
    "$command" "${ATTENTION_FILTER:-}"
  grep '^|' "$log" > "$out/tables.md"
fi

if [ "$part" = profile-attention ]; then
  lib="$bundle/lib/libkiln_ops.so"
  export KILN_CACHE_DIR=$(mktemp -d) KILN_DUMP_DIR="$out/kiln-dump"
  # shellcheck disable=SC2086 # (the problems are words)
  record "attention: Kiln and cuDNN, timed" python3 bench/device/profile_attention.py "$lib" ${ATTENTION_PROBLEMS:-}
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
  metrics=smsp__inst_executed.sum,gpu__time_duration.sum
  metrics+=,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active
  # shellcheck disable=SC2086
  record "attention: Nsight Compute" "$ncu" --profile-from-start off --section SpeedOfLight \
    --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy \
    --section LaunchStats --section InstructionStats --metrics "$metrics" \
    python3 bench/device/profile_attention.py "$lib" ${ATTENTION_PROBLEMS:-}
fi
