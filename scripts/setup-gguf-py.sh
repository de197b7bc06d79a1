#!/bin/sh
# Creates a Python virtual environment with gguf-py (+ numpy) for the GGUF
# interop test (tests/io/gguf_interop_test.c, scripts/gguf_interop.py).
#
#   scripts/setup-gguf-py.sh [DIR]      default DIR: ${XDG_CACHE_HOME:-~/.cache}/topos/gguf-py
#
# Prints the python to use on the last line of stdout, so CI can do:
#   TOPOS_GGUF_PY=$(scripts/setup-gguf-py.sh | tail -1) build/bin/topos_tests gguf_interop
# Exits 1 (and the test then SKIPs) when python3-venv or PyPI is unavailable.
set -e
dir=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/topos/gguf-py}
py="$dir/bin/python"
if [ -x "$py" ] && "$py" -c 'import gguf, numpy' >/dev/null 2>&1; then
  echo "$py"
  exit 0
fi
if ! command -v python3 >/dev/null 2>&1; then
  echo "setup-gguf-py: python3 not found" >&2
  exit 1
fi
mkdir -p "$(dirname "$dir")"
if ! python3 -m venv "$dir" >&2; then
  echo "setup-gguf-py: 'python3 -m venv' failed (Debian: apt-get install python3-venv)" >&2
  exit 1
fi
if ! "$dir/bin/pip" install --quiet --disable-pip-version-check gguf numpy >&2; then
  echo "setup-gguf-py: pip could not install gguf and numpy (is PyPI reachable?)" >&2
  exit 1
fi
"$py" -c 'import gguf, numpy' >&2
echo "$py"
