#!/usr/bin/env bash
# Runs the whole test suite (ctest over build/) and, when the sanitizer build
# is there (scripts/build-sanitizers.sh), its tests too (ctest over
# build-sanitize/: the sanitized unit tests and the bounded fuzzer runs).
# Arguments go to every ctest. Ends with one summary line over all of them:
# "N passed, N failed, N skipped" (GPU tests skip without a GPU).
set -uo pipefail
cd "$(dirname "$0")/.."

passed=0 failed=0 skipped=0 status=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# ctest over one build folder; adds its counts to the totals.
run() {
  ctest --test-dir "$1" --output-on-failure "${@:2}" 2>&1 | tee "$log"
  local code=${PIPESTATUS[0]}
  [ "$code" -eq 0 ] || status=$code
  local total failures skips
  total=$(grep -oE 'tests failed out of [0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1)
  failures=$(grep -oE '[0-9]+ tests failed out of' "$log" | grep -oE '^[0-9]+' | tail -1)
  skips=$(grep -cE '^\s+[0-9]+ - .*\(Skipped\)$' "$log")
  total=${total:-0}
  failures=${failures:-0}
  passed=$((passed + total - failures - skips))
  failed=$((failed + failures))
  skipped=$((skipped + skips))
}

run build "$@"
if [ -f build-sanitize/CTestTestfile.cmake ]; then
  echo
  echo "== build-sanitize: the sanitized unit tests and the fuzzers"
  # Two at a time: the fuzzers run for a fixed time each.
  run build-sanitize --parallel 2 "$@"
fi
echo "${passed} passed, ${failed} failed, ${skipped} skipped"
exit "$status"
