# Sourced by the device scripts' packing steps (not run on its own).
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
