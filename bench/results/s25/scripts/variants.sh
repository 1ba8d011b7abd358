#!/bin/bash
# Builds the sym_probe binaries of runs 1, 2 and 4 (repository root; nvcc): sp_base (the
# committed kernel), sp_vM (vM.patch: an LL or LL12 body's thread takes up to 2 lines at once,
# every load, store and poll of them together), sp_vM4 (up to 4) and sp_vNB (vNB.patch: the LL
# forms without the barrier before a block's sequence store; unsafe). Timing only; the README says
# what they showed. Run 1 carried the first three in .carry/s25, run 4 sp_base and sp_vNB.
#   bench/results/s25/scripts/variants.sh OUTDIR
set -eu
out=${1:?usage: variants.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
mkdir -p "$tmp/vM" "$tmp/vNB"
for v in vM vNB; do
  cp kernels/primitives.cuh "$tmp/$v/"
  patch -s -o "$tmp/$v/sym.cuh" kernels/sym.cuh < "$here/$v.patch"
done
f="-O2 -arch=sm_90 -std=c++17 --expt-relaxed-constexpr"
nvcc $f -Ikernels -Iinclude -o "$out/sp_base" scripts/sym_probe.cu
nvcc $f -I"$tmp/vM" -Ikernels -Iinclude -o "$out/sp_vM" scripts/sym_probe.cu
nvcc $f -DKILN_LL_M=4 -I"$tmp/vM" -Ikernels -Iinclude -o "$out/sp_vM4" scripts/sym_probe.cu
nvcc $f -I"$tmp/vNB" -Ikernels -Iinclude -o "$out/sp_vNB" scripts/sym_probe.cu
