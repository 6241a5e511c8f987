#!/usr/bin/env bash
# Installs the build in $1 into a temporary prefix, then builds and runs a
# user's projects against that install alone: a CMake project
# (find_package(Kiln CONFIG): a kernel of its own and an op) and a C program
# through pkg-config (kiln_ops.pc: the ops library's C ABI), both on the
# default device (the interpreter without a GPU). Also asks each installed
# tool for its version.
#   tests/package/run.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"

cmake --install "$build" --prefix "$prefix" > "$work/install.log"
for tool in autotune kilnc kiln-info; do
  "$prefix/bin/$tool" --version
done

cmake -S "$here" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release > "$work/configure.log"
cmake --build "$work/consumer" > "$work/build.log" || { cat "$work/build.log"; exit 1; }
"$work/consumer/consumer"

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
# shellcheck disable=SC2046 # (pkg-config's flags are words)
cc -std=c11 -o "$work/ops_c_api" "$here/../../examples/ops_c_api.c" $(pkg-config --cflags --libs kiln_ops) -lm
"$work/ops_c_api"
echo "pkg-config: kiln $(pkg-config --modversion kiln), kiln_ops $(pkg-config --modversion kiln_ops)"
