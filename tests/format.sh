#!/usr/bin/env bash
# Checks that every C, CUDA and header file of the tree is formatted as .clang-format says
# (clang-format --dry-run -Werror), naming the files that are not. Exits 77 (ctest: skipped) where
# clang-format is missing. Usage: tests/format.sh [SOURCE_DIR] [CLANG_FORMAT]
set -uo pipefail
root=$(cd "${1:-$(dirname "$0")/..}" && pwd)
cf=${2:-${CLANG_FORMAT:-clang-format}}
if ! command -v "$cf" > /dev/null; then
  echo "format: skipped: no $cf (apt-get install clang-format)"
  exit 77
fi
cd "$root"
if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  files=$(git ls-files -- '*.c' '*.h' '*.cu' '*.cuh')
else
  files=$(find . -path ./build\* -prune -o -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -print)
fi
bad=0
for f in $files; do
  if ! "$cf" --dry-run -Werror --style=file "$f" > /dev/null 2>&1; then
    echo "format: $f differs from .clang-format (clang-format -i $f)"
    bad=$((bad + 1))
  fi
done
if [ "$bad" -gt 0 ]; then
  echo "format: $bad files to format"
  exit 1
fi
echo "format: $(echo "$files" | wc -w) files formatted"
