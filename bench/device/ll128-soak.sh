#!/usr/bin/env bash
# Whether the kernels' LL128 can be turned on: runs gpu_plans/classic_plans_2gpus with
# KILN_LL128=1 (LL128 plans on the LL128 kernels instead of Simple) up to RUNS times, each with its
# own seed, then prim_bench's hop and pipe checks (every element checked). The runtime keeps LL128
# off until this passes many times over (kernels/README.md says why).
#
# On the GPU machine, from the repository root, with the archive of bench/device/pack.sh
# carried (.carry/pack.tar.xz; unpacked here when .carry/bin is missing):
#   bench/device/ll128-soak.sh [RUNS] [LIMIT_SECONDS]   (defaults 6 and 560: one device call)
# A run that would not fit the time left is skipped and said. Prints one line per run; the whole
# output of each is in $OUT (else /tmp/kiln-ll128). Exit status: 0 when every run that ran
# passed, 1 otherwise.
set -u
cd "$(dirname "$0")/../.."
T0=$(date +%s)
runs=${1:-6}
LIMIT=${2:-560}
out=${OUT:-/tmp/kiln-ll128}
[ -d .carry/bin ] || tar xJf .carry/pack.tar.xz -C .carry || exit 1
. bench/device/carry-libs.sh
device_env "$PWD/.carry/lib"
export KILN_LL128=1
mkdir -p "$out"
fail=0
left() { echo $((LIMIT - ($(date +%s) - T0))); }
for i in $(seq 1 "$runs"); do
  seed=$((1000 + i))
  # one run of the sweep takes about 60 s on 2x H200; keep 40 s for prim_bench
  [ "$(left)" -lt 130 ] && { echo "ll128-soak: run $i (seed $seed): skipped, no time left"; continue; }
  log="$out/ll128_seed_$seed.txt"
  KILN_TEST_SEED=$seed timeout -k 5 $(($(left) - 40)) .carry/bin/test_gpu_plans --verbose -j1 \
    --filter 'gpu_plans/classic_plans_2gpus' > "$log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || fail=1
  echo "ll128-soak: run $i (seed $seed): exit $rc $(grep -m1 -E 'want .* got' "$log")"
done
timeout -k 5 35 .carry/bin/prim_bench --iters 5 --max 32M > "$out/ll128_prim.txt" 2>&1
rc=$?
[ $rc -eq 0 ] || fail=1
echo "ll128-soak: prim_bench hop and pipe checks: exit $rc"
exit $fail
