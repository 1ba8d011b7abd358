#!/usr/bin/env bash
# Installs the build BUILD into a temporary prefix and builds tests/install/consumer.c against it
# twice, as a user would: with `pkg-config --cflags --libs kiln` and with CMake's
# find_package(kiln); both programs must run. Usage: tests/install/run.sh BUILD
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
# on a failure, what the failing step printed (the logs go with the folder)
trap 'rc=$?; [ $rc -eq 0 ] || cat "$tmp"/*.log 2>/dev/null >&2; rm -rf "$tmp"; exit $rc' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
# The tree must hold wherever it is put: move it after installing.
mv "$tmp/prefix" "$tmp/moved"
pc=$(find "$tmp/moved" -name kiln.pc -path '*pkgconfig*' | head -1)
[ -n "$pc" ] || { echo "no kiln.pc installed" >&2; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
cc=${CC:-cc}
# shellcheck disable=SC2046
"$cc" -o "$tmp/consumer-pc" "$here/consumer.c" $(pkg-config --cflags --libs kiln)
# libkiln.so is where pkg-config says, off the loader's path (CMake's build sets an RPATH).
LD_LIBRARY_PATH="$(pkg-config --variable=libdir kiln)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$tmp/consumer-pc"
cmake -S "$here" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$tmp/moved" > "$tmp/cmake.log"
cmake --build "$tmp/cmake" > "$tmp/cmake-build.log"
"$tmp/cmake/consumer"
