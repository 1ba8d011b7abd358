#!/bin/bash
# Builds run 1's sym_probe binaries (repository root; nvcc): sp_base (the committed kernel),
# sp_vM (vM.patch: an LL or LL12 body's thread takes up to 2 lines at once, every load, store
# and poll of them together) and sp_vM4 (up to 4). Timing only; run 1 says what they showed.
#   bench/results/s25/scripts/variants.sh OUTDIR
set -eu
out=${1:?usage: variants.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
cp kernels/primitives.cuh "$tmp/"
patch -s -o "$tmp/sym.cuh" kernels/sym.cuh < "$here/vM.patch"
f="-O2 -arch=sm_90 -std=c++17 --expt-relaxed-constexpr"
nvcc $f -Ikernels -Iinclude -o "$out/sp_base" scripts/sym_probe.cu
nvcc $f -I"$tmp" -Ikernels -Iinclude -o "$out/sp_vM" scripts/sym_probe.cu
nvcc $f -DKILN_LL_M=4 -I"$tmp" -Ikernels -Iinclude -o "$out/sp_vM4" scripts/sym_probe.cu
