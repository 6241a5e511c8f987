#!/usr/bin/env bash
# Runs the whole test suite (ctest over build/) and ends with one summary
# line: "N passed, N failed, N skipped" (GPU tests skip without a GPU).
set -uo pipefail
cd "$(dirname "$0")/.."

log=$(mktemp)
ctest --test-dir build --output-on-failure "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
total=$(grep -oE 'tests failed out of [0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1)
failed=$(grep -oE '[0-9]+ tests failed out of' "$log" | grep -oE '^[0-9]+' | tail -1)
skipped=$(grep -cE '^\s+[0-9]+ - .*\(Skipped\)$' "$log")
rm -f "$log"
total=${total:-0}
failed=${failed:-0}
echo "$((total - failed - skipped)) passed, ${failed} failed, ${skipped} skipped"
exit "$status"
