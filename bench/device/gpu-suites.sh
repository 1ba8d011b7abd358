#!/bin/bash
# The runtime's one script for the GPU machine: runs the GPU suites (and, when built, kiln profile)
# from binaries built on the CPU machine and carried in .carry/ (bin/ and lib/, see
# bench/device/gpu-suites.sh --pack). Logs go to $OUT; a short table is printed last.
#   bench/device/gpu-suites.sh --pack BUILD_DIR   (CPU machine) fill .carry/ from a build
#   bench/device/gpu-suites.sh [TEST_FILTER...]   (GPU machine) run; filters are Criterion names
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/bench/device/carry-libs.sh"
if [ "${1:-}" = "--pack" ]; then
  build=${2:?usage: --pack BUILD_DIR}
  bins=("$build"/tests/gpu/test_gpu_*)
  [ -x "$build/kiln" ] && bins+=("$build/kiln")
  pack_bins "$here/.carry" "${bins[@]}"
  exit
fi
device_env "$here/.carry/lib"
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader > "$OUT/gpus.txt" 2>&1
nvidia-smi topo -m >> "$OUT/gpus.txt" 2>&1
summary="$OUT/summary.txt"
: > "$summary"
filters=("$@")
[ ${#filters[@]} -eq 0 ] && filters=("*")
for t in "$here"/.carry/bin/test_gpu_*; do
  name=$(basename "$t")
  for f in "${filters[@]}"; do
    tag=$(echo "$f" | tr -c 'A-Za-z0-9_\n' '_')
    start=$(date +%s.%N)
    timeout -k 5 "${KILN_TEST_TIMEOUT:-240}" "$t" --jobs 1 --verbose --filter "*/$f" \
      > "$OUT/$name.$tag.log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    printf '%-22s %-28s rc=%-4s %6.1fs  %s\n' "$name" "$f" "$rc" "$(awk "BEGIN{print $end - $start}")" \
      "$(grep -E 'Synthesis|Tested' "$OUT/$name.$tag.log" | tail -1)" >> "$summary"
  done
done
if [ -x "$here/.carry/bin/kiln" ] && [ -n "${KILN_PROFILE:-}" ]; then
  timeout -k 5 240 "$here/.carry/bin/kiln" profile $KILN_PROFILE -o "$OUT/profile.xml" > "$OUT/profile.log" 2>&1
  echo "profile rc=$?" >> "$summary"
  tail -20 "$OUT/profile.log"
fi
for f in "$OUT"/*.log; do echo "== $f"; grep -A2 -E "FAIL|fail|error|Error|Assert|Timeout|Crash|signal" "$f" | head -12; done
(cd "$OUT" && tar czf logs.tgz *.log *.txt 2>/dev/null && rm -f *.log)
echo "==== summary"
cat "$summary"
