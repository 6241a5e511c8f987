# shellcheck shell=bash
# The ops library through its C ABI beside torch.compile, eager PyTorch
# and a copy (sourced by bench/device/run.sh for: ops, all; norm-occupancy:
# the normalizations with the default plans, then with plans asking for
# 4 programs a multiprocessor).

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
  ! grep -q "| FAIL" "$results"
  exit
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
