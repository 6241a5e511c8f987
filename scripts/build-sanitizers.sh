#!/usr/bin/env bash
# Builds the sanitizer build into build-sanitize/ (KILN_SANITIZE=ON, clang
# 22): the parts of Kiln that take untrusted input under AddressSanitizer and
# UndefinedBehaviorSanitizer, their unit tests and the libFuzzer harnesses of
# fuzz/. scripts/test.sh then runs its tests too (labels "sanitize", "fuzz").
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh --sanitizers
cmake -S . -B build-sanitize -G Ninja -DKILN_SANITIZE=ON \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22
cmake --build build-sanitize
