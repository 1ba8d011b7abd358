#!/usr/bin/env bash
# Builds one libFuzzer harness per kiln XML parser (topology, plan, sketch), one for the judges
# of a plan (verify: the verifier, the simulator and the index's tables on every plan that reads)
# and one for TACCL's JSON files (taccl: the JSON reader, the topology and sketch readers)
# with
#   clang -fsanitize=fuzzer,address,undefined
# and runs each for a bounded time, starting from the seed corpora under fuzz/seeds/ (files
# written by kiln; verify starts from the plan seeds). Not part of CI's test run.
#
# usage: fuzz/run.sh [SECONDS] [HARNESS...]     (HARNESS: topology plan sketch verify taccl; default all)
# env:   FUZZ_SECONDS (default 60 per harness), FUZZ_OUT (default build-fuzz/), CC_FUZZ (clang)
# Exits 0 with a message when clang or its libFuzzer is unavailable; non-zero when a harness
# finds a crash (the reproducer is left in FUZZ_OUT as crash-HARNESS-*).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
secs=${1:-${FUZZ_SECONDS:-60}}
[ $# -gt 0 ] && shift
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(topology plan sketch verify taccl)
cc=${CC_FUZZ:-clang}
out=${FUZZ_OUT:-$root/build-fuzz}

skip() { echo "fuzz/run.sh: skipped: $*" >&2; exit 0; }
command -v "$cc" >/dev/null 2>&1 || skip "$cc not found"
command -v pkg-config >/dev/null 2>&1 && pkg-config --exists libxml-2.0 || skip "libxml2 development files not found"
mkdir -p "$out"
printf 'int LLVMFuzzerTestOneInput(const char* d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
  > "$out/probe.c"
"$cc" -fsanitize=fuzzer,address "$out/probe.c" -o "$out/probe" >/dev/null 2>&1 ||
  skip "$cc cannot link -fsanitize=fuzzer (libFuzzer missing; on Debian: apt-get install libclang-rt-<version>-dev)"

# kiln_core: every solver/*.c outside solver/synth (the synthesizer needs GLPK), as CMake builds it
# (gnu11: CMAKE_C_STANDARD 11 with extensions).
src_paths=("$root"/solver/*.c)
# shellcheck disable=SC2207
xml_flags=($(pkg-config --cflags --libs libxml-2.0))

status=0
for h in "${harnesses[@]}"; do
  [ -f "$here/fuzz_$h.c" ] || { echo "fuzz/run.sh: no harness fuzz/fuzz_$h.c" >&2; exit 2; }
  echo "== building fuzz_$h" >&2
  "$cc" -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -DKILN_BUILDING -I"$root/include" -I"$root/solver" "${src_paths[@]}" "$here/fuzz_$h.c" \
    "${xml_flags[@]}" -lm -o "$out/fuzz_$h"
  mkdir -p "$out/corpus/$h"
  echo "== running fuzz_$h for ${secs}s" >&2
  # The first corpus folder collects new inputs; the seeds folder is only read.
  seeds="$here/seeds/$h"
  [ -d "$seeds" ] || seeds="$here/seeds/plan"
  dict="$here/xml.dict"
  [ "$h" = taccl ] && dict="$here/json.dict"
  if "$out/fuzz_$h" "$out/corpus/$h" "$seeds" -dict="$dict" -max_total_time="$secs" \
      -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$out/crash-$h-" 2> "$out/fuzz_$h.log"; then
    echo "fuzz_$h: ok ($(grep -E 'stat::number_of_executed_units' "$out/fuzz_$h.log" | awk '{print $2}') runs," \
         "corpus $(ls "$out/corpus/$h" | wc -l) files)"
  else
    echo "fuzz_$h: FAILED, see $out/fuzz_$h.log and $out/crash-$h-*"
    tail -40 "$out/fuzz_$h.log" >&2
    status=1
  fi
done
exit $status
