#!/bin/bash
# Packs what the GPU machine needs from a CUDA build into one compressed file, .carry/pack.tar.xz
# (the device's carry is capped at 64 MiB; the baked kernels are in libkiln.so and, again, in the
# drop-in; xz with a 256 MiB dictionary packs the two copies as about one): the GPU suites, the
# kiln CLI (kiln tune, kiln profile), coll_bench, prim_bench, host_bench, nvl_bench, the probes
# (pdl_probe, sym_probe), the drop-in libnccl.so.2 and the shared libraries they need that the GPU
# machine lacks (libkiln.so, Criterion, GLPK, ...).
# On the GPU machine: tar xJf .carry/pack.tar.xz -C .carry  -> .carry/{bin,lib,shim}
#   bench/device/pack.sh BUILD_DIR [EXTRA_BINARY...]
# EXTRA_BINARY: more executables for bin/ (an older build's coll_bench, copied aside, for an A/B
# comparison in one call), under their own file names, which must differ from the build's
# binaries and from each other (coll_bench_A, ...).
set -eu
build=${1:?usage: bench/device/pack.sh BUILD_DIR [EXTRA_BINARY...]}
shift
here=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/lib" "$tmp/shim" "$here/.carry"
for b in tests/gpu/test_gpu_plans tests/gpu/test_gpu_sym tests/gpu/test_gpu_graphs tests/gpu/test_gpu_streams \
  tests/gpu/test_gpu_faults tests/gpu/test_gpu_nodes tests/gpu/test_gpu_memsteps tests/gpu/test_gpu_tune kiln \
  bench/coll_bench bench/prim_bench bench/host_bench bench/nvl_bench bench/pdl_probe \
  bench/sym_probe; do
  [ -x "$build/$b" ] && cp "$build/$b" "$tmp/bin/"
done
for b in "$@"; do
  if [ -e "$tmp/bin/$(basename "$b")" ]; then
    echo "pack: $b: bin/$(basename "$b") is taken; copy it aside under another name" >&2
    exit 2
  fi
  cp "$b" "$tmp/bin/"
done
[ -x "$build/tests/gpu/test_gpu_shim" ] && cp "$build/tests/gpu/test_gpu_shim" "$tmp/shim/"
[ -f "$build/host/shim/libnccl.so.2" ] && cp -L "$build/host/shim/libnccl.so.2" "$tmp/shim/"
. "$here/bench/device/carry-libs.sh"
carry_libs "$tmp"/bin/* "$tmp"/shim/* | while read -r l; do cp -L "$l" "$tmp/lib/"; done
strip --strip-debug "$tmp"/bin/* "$tmp"/shim/* "$tmp"/lib/* 2>/dev/null || true
tar cf - -C "$tmp" bin lib shim | xz -T1 --lzma2=preset=6,dict=256MiB > "$here/.carry/pack.tar.xz.tmp"
mv "$here/.carry/pack.tar.xz.tmp" "$here/.carry/pack.tar.xz"
ls -la "$here/.carry/pack.tar.xz"
