#!/usr/bin/env bash
# The ops library's Python package as a user installs it: a fresh virtual
# environment (seeing the system's NumPy), `pip install` of ops/python from
# this checkout with nothing fetched, then tests/python/numpy_ops.py on the
# build's libkiln_ops.so (KILN_OPS_LIBRARY).
#   tests/python/run.sh PYTHON BUILD_DIR
set -euo pipefail
python=$1
build=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$python" -m venv --system-site-packages "$work/venv"
# (From a copy: setuptools writes its build folders beside the sources.)
cp -r "$here/../../ops/python" "$work/package"
"$work/venv/bin/pip" install --quiet --no-index --no-build-isolation "$work/package"
cd "$work" # (away from the checkout: the installed module is the one imported)
KILN_OPS_LIBRARY="$build/lib/libkiln_ops.so" "$work/venv/bin/python" "$here/numpy_ops.py"
