#!/bin/sh
# Builds with the cuda backend on and runs only its tests. On a machine with
# an NVIDIA GPU (driver + libcudart/libcublas 12 or 13 findable by dlopen)
# the large-product tests run through cuBLAS; elsewhere they skip and say why.
#   sh scripts/cuda-check.sh [build-dir]
set -e
dir=${1:-build-cuda}
gen=""
command -v ninja >/dev/null 2>&1 && gen="-G Ninja"
cmake -S . -B "$dir" $gen -DCMAKE_BUILD_TYPE=Release -DTOPOS_CUDA=ON >/dev/null
cmake --build "$dir" -j "$(nproc 2>/dev/null || echo 2)"
"$dir/bin/topos" backends | sed -n '1,9p'
TOPOS_TEST_VERBOSE=1 "$dir/bin/topos_tests" cuda_
