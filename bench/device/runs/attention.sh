# shellcheck shell=bash
# The attention op (sourced by bench/device/run.sh for: attention): its GPU
# tests against the interpreter, then the op beside PyTorch's
# scaled_dot_product_attention on cuDNN and FlashAttention, one timer
# (bench/attention_vs_torch.py; ATTENTION_FILTER, a substring, runs a subset).

if [ "$part" = attention ]; then
  command="bash bench/device/run.sh (bundle from scripts/device-bundle.sh at $(cat "$bundle/REVISION" 2>/dev/null)) attention"
  export KILN_CACHE_DIR=$(mktemp -d)
  record "attention: GPU tests (vs interpreter)" "$bundle/bin/kiln_gpu_tests" --gtest_brief=1 \
    --gtest_filter='GpuOps.Attention*'
  record "attention: Kiln vs cuDNN and FlashAttention, one timer" python3 bench/attention_vs_torch.py \
    "$bundle/lib/libkiln_ops.so" "$out/attention-vs-torch.json" "$command" "${ATTENTION_FILTER:-}"
  sed -n '/^| workload | Kiln | cuDNN/,$p' "$log" | grep '^|' > "$out/attention-table.md"
fi
