#!/usr/bin/env bash
# Whether the kernels' LL128 can be turned on: runs gpu_runtime/classic_plans_2gpus with
# KILN_LL128=1 (LL128 plans on the LL128 kernels instead of Simple) RUNS times, each with its own
# seed, then prim_bench's hop test (every element of every round checked). The runtime keeps
# LL128 off until this passes many times over (kernels/README.md says why).
#
# On the GPU machine, from the repository root, after `tar xJf .carry/pack.tar.xz -C .carry`
# (scripts/device-pack.sh on the CPU machine):
#   scripts/device-ll128.sh [RUNS] [OUTDIR]
# Prints one line per run; the whole output of each is in OUTDIR (default $OUT, else /tmp).
# Exit status: 0 when every run passed, 1 otherwise.
set -uo pipefail
runs=${1:-10}
out=${2:-${OUT:-/tmp}}
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/carry-libs.sh"
device_env "$here/.carry/lib"
export KILN_LL128=1
bin="$here/.carry/bin"
mkdir -p "$out"
fail=0
for i in $(seq 1 "$runs"); do
  seed=$((1000 + i))
  log="$out/ll128_seed_$seed.txt"
  KILN_TEST_SEED=$seed timeout 300 "$bin/test_gpu_runtime" --verbose -j1 \
    --filter 'gpu_runtime/classic_plans_2gpus' > "$log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || fail=1
  echo "device-ll128: run $i (seed $seed): exit $rc $(grep -m1 -E 'want .* got' "$log" || true)"
done
"$bin/prim_bench" --iters 5 --max 32M > "$out/ll128_prim.txt" 2>&1
rc=$?
[ $rc -eq 0 ] || fail=1
echo "device-ll128: prim_bench hop and pipe checks: exit $rc"
exit $fail
