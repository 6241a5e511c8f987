#!/usr/bin/env bash
# Installs what Kiln needs to build and test on Debian 12 (bookworm): the
# HIP runtime too, which Kiln loads at run time, so that the tests exercise
# its loader on a machine without an AMD GPU.
# With --sanitizers, also what the sanitizer build and the fuzzers need
# (scripts/build-sanitizers.sh): clang 22 and its runtimes, which hold
# ASan, UBSan and libFuzzer.
set -euo pipefail

packages=(
  cmake ninja-build ccache g++ python3 pkg-config
  python3-numpy python3-venv python3-setuptools python3-wheel
  llvm-22-dev libmlir-22-dev mlir-22-tools lld-22 libzstd-dev
  nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev libdlpack-dev
  libamdhip64-5
)
if [ "${1:-}" = "--sanitizers" ]; then
  packages+=(clang-22 libclang-rt-22-dev)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
