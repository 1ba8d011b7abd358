# Sourced by the device scripts (not run on its own).
# carry_libs FILE...: prints, one per line, the shared libraries the files need that the GPU
# machines lack - everything ldd resolves except glibc, libstdc++/libgcc, libxml2 and its
# dependencies (zlib, ICU, lzma), NCCL and the CUDA driver, which those machines have.
carry_libs() {
  local f
  for f in "$@"; do
    [ -f "$f" ] && ldd "$f" | awk '/=> \// {print $3}'
  done | sort -u |
    grep -v -E '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s|libnccl|libresolv|libz|libxml2|libicu[a-z0-9]*|liblzma|libcuda)\.so'
}

# pack_bins DIR FILE...: the packing step of a device script (CPU machine): empties DIR, copies
# the FILEs into DIR/bin stripped and the libraries they need that the GPU
# machines lack into DIR/lib. Fails, naming it, on a FILE that is missing.
pack_bins() {
  local dir=$1 f
  shift
  rm -rf "$dir" && mkdir -p "$dir/bin" "$dir/lib" || return 1
  for f in "$@"; do
    cp "$f" "$dir/bin/" || { echo "no $f: build it first" >&2; return 1; }
  done
  carry_libs "$dir"/bin/* | while read -r l; do cp -L "$l" "$dir/lib/"; done
  strip --strip-debug "$dir"/bin/* 2>/dev/null
  du -sh "$dir"
}

# device_safety: what every run on the GPU machines needs: NVLink multicast off everywhere (it
# can take the shared host down) and GPU suites that fail instead of skipping when GPUs are
# missing, reading the plans of this checkout (the scripts run from the repository root).
# NCCL_LIB: PyTorch's NCCL 2.28.9.
device_safety() {
  export KILN_TEST_REQUIRE_GPUS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
  export KILN_TEST_PLANS_DIR=${KILN_TEST_PLANS_DIR:-$PWD/plans}
  NCCL_LIB=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
}
# device_env LIBDIR: device_safety, with NCCL_LIB and LIBDIR first on the library path.
device_env() {
  device_safety
  export LD_LIBRARY_PATH="$NCCL_LIB:$1:${LD_LIBRARY_PATH:-}"
}
