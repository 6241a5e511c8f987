# shellcheck shell=bash
# The ops library through its C ABI beside torch.compile, eager PyTorch
# and a copy (sourced by bench/device/run.sh for: ops, all).

# ops (or all): the ops library through its C ABI against torch.compile,
# eager PyTorch and a copy, under one timer (about 3 minutes).
if [ "$part" = ops ] || [ "$part" = all ]; then
  command="bash bench/device/run.sh (bundle from scripts/device-bundle.sh at $(cat "$bundle/REVISION" 2>/dev/null)) ops"
  export KILN_CACHE_DIR=$(mktemp -d)
  record "ops vs PyTorch, one timer" python3 bench/ops_vs_torch.py "$bundle/lib/libkiln_ops.so" \
    "$out/ops-vs-torch.json" "$command"
  sed -n '/^| workload | Kiln | torch.compile/,$p' "$log" > "$out/ops-table.md"
fi
