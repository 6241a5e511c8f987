#!/usr/bin/env bash
# On the GPU machine: tunes the ops library's normalizations on the
# benchmark shapes with `autotune`, tunes one again (a warm store: nothing
# compiled or timed), then times the ops with their tuned plans next to a
# device copy. Writes $OUT/tune-*.txt, $OUT/tuned-records.json and a log.
#   bash bench/device/tune.sh .device/bundle
set -uo pipefail
bundle=${1:-.device/bundle}
out=${OUT:-/tmp/kiln-device-out}
mkdir -p "$out"
export KILN_CACHE_DIR=${KILN_CACHE_DIR:-/tmp/kiln-tune-cache}
export PATH=/usr/local/cuda/bin:$PATH
summary="$out/tune-summary.txt"
: > "$summary"
for op in softmax layer_norm rms_norm; do
  for dtype in f32 bf16; do
    for shape in "16384 8192" "4096 32768"; do
      set -- $shape
      file="$out/tune-$op-$dtype-$1x$2.txt"
      "$bundle/bin/autotune" --op "$op" --rows "$1" --cols "$2" --dtype "$dtype" --reps 10 > "$file" 2>&1
      echo "$op $dtype $1x$2: $(grep -E '^best:|configs in the space' "$file" | tr '\n' ' ')" >> "$summary"
    done
  done
done
# A second run finds everything stored: it compiles and times nothing.
"$bundle/bin/autotune" --op softmax --rows 16384 --cols 8192 --dtype bf16 --reps 10 > "$out/tune-again.txt" 2>&1
echo "again: $(grep 'configs in the space' "$out/tune-again.txt")" >> "$summary"
"$bundle/bin/memory_bench" --benchmark_filter='^ops (softmax|layer norm|rms norm) (f32|bf16) (16384x8192|4096x32768)/|cuMemcpy' \
  --records "$out/tuned-records.json" \
  --command "bash bench/device/tune.sh (bundle $(cat "$bundle/REVISION")): memory_bench with the tuned plans" \
  > "$out/tuned-bench.log" 2>&1
cat "$summary"
grep '^| ops' "$out/tuned-bench.log"
