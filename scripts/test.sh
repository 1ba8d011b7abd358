#!/usr/bin/env bash
# Builds kiln and runs every test suite: the CPU suites always; the GPU suites run where GPUs are
# present and say "skipped" otherwise. Usage: scripts/test.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
scripts/setup.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)"
cd "$build"
ctest --output-on-failure -j1
