#!/bin/bash
# The perf helper's one-call check on the GPU machine: kiln vs NCCL (bench/coll_bench, 4 GPUs, one
# process driving them, every collective, 8 B..1 GiB, outputs compared with NCCL's), then the GPU
# correctness suite (tests/gpu/test_gpu_runtime) without the 2-GPU sweep. Binaries are built on the
# CPU machine and carried in .carry/perf/ (ignored; name it in the device run's carry):
#   scripts/device-perf.sh --pack BUILD_DIR   (CPU machine) fill .carry/perf/ from a build
#   scripts/device-perf.sh                    (GPU machine) run; a short table is printed last
#   scripts/device-perf.sh --final            (GPU machine) shorter: tables, plan sweep, suite
#                                             without the 2- and 4-GPU plan sweeps
# Every step has a timeout; the whole run stays under about 3.5 minutes.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
carry="$here/.carry/perf"
. "$here/scripts/carry-libs.sh"
if [ "${1:-}" = "--pack" ]; then
  build=${2:?usage: --pack BUILD_DIR}
  pack_bins "$carry" "$build/tests/gpu/test_gpu_runtime" "$build/bench/coll_bench"
  exit
fi
device_env "$carry/lib"
OUT=${OUT:-/tmp/kiln-perf}
mkdir -p "$OUT"
card=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
echo "# $ngpu x $card, NCCL_NVLS_ENABLE=0" | tee "$OUT/summary.txt"
if [ "${1:-}" = "--final" ]; then
  # Second form (about a minute): the default table, graphs for the small sizes, every baked plan
  # at every size (--sweep, to check the byte ranges), and the GPU suite without the sweeps.
  all=(--colls allreduce,allgather,reducescatter,alltoall)
  timeout -k 5 40 "$carry/bin/coll_bench" --ranks 4 --min 8 --max 1G --iters 10 --warmup 3 "${all[@]}" \
    --csv "$OUT/coll_n4.csv" > "$OUT/coll_n4.log" 2>&1
  echo "coll_bench rc=$?" >> "$OUT/summary.txt"
  timeout -k 5 20 "$carry/bin/coll_bench" --ranks 4 --min 8 --max 64K --iters 10 --warmup 3 --graph 10 \
    "${all[@]}" > "$OUT/graph_n4.log" 2>&1
  echo "coll_bench --graph 10 rc=$?" >> "$OUT/summary.txt"
  timeout -k 5 40 "$carry/bin/coll_bench" --ranks 4 --sweep --min 8 --max 256M --iters 5 --warmup 2 \
    "${all[@]}" > "$OUT/sweep_n4.log" 2>&1
  echo "coll_bench --sweep rc=$?" >> "$OUT/summary.txt"
  if [ -x "$carry/bin/kiln" ]; then # alpha/beta of Simple, one block per connection (as before)
    timeout -k 5 25 "$carry/bin/kiln" profile --gpus 2 -o "$OUT/profile.xml" > "$OUT/profile.log" 2>&1
    echo "kiln profile --gpus 2 rc=$?" >> "$OUT/summary.txt"
  fi
  for f in large_buffers graph_replays several_streams two_communicators missing_peer_times_out \
           supports_and_load_errors one_process_per_gpu; do
    timeout -k 5 40 "$carry/bin/test_gpu_runtime" --jobs 1 --filter "gpu_runtime/$f" > "$OUT/test.$f.log" 2>&1
    printf 'test %-26s rc=%-4s %s\n' "$f" "$?" "$(grep -E 'Synthesis' "$OUT/test.$f.log" | tail -1)" >> "$OUT/summary.txt"
  done
  for f in "$OUT"/test.*.log; do grep -H -A3 -E "FAIL|Assert|Timeout|Crash|signal" "$f" | head -8; done
  (cd "$OUT" && tar czf tests.tgz test.*.log && rm -f test.*.log)
  echo "==== sweep_n4: coll size(B) plan baked(us) err speedup"
  awk '/^# [a-z]+, [0-9]+ ranks/ {c=$2} /^  +[0-9]/ {printf "%-6.6s %10s %-30.30s %8s %s %s\n", c, $1, $4, $8, $11, $NF}' "$OUT/sweep_n4.log" | grep -v " - "
  for f in graph_n4 coll_n4; do
    echo "==== $f: coll size(B) plan | nccl(us) busbw | baked(us) busbw err | interp(us) busbw err | speedup"
    awk '/^# [a-z]+, [0-9]+ ranks/ {c=$2} /^  +[0-9]/ {printf "%-6.6s %10s %-24.24s %8s %6s | %8s %6s %s | %8s %6s %s | %s\n", c, $1, $4, $5, $7, $8, $10, $11, $12, $14, $15, $NF}' "$OUT/$f.log"
    grep -E "rror|fail" "$OUT/$f.log" | head -3
  done
  cat "$OUT/profile.log" 2>/dev/null | tail -4
  cat "$OUT/summary.txt"
  exit 0
fi
t0=$(date +%s)
timeout -k 5 "${KILN_BENCH_TIMEOUT:-80}" "$carry/bin/coll_bench" --ranks 4 --min 8 --max 1G --iters 10 \
  --warmup 3 --colls allreduce,allgather,reducescatter,alltoall --csv "$OUT/coll_n4.csv" \
  > "$OUT/coll_n4.log" 2>&1
echo "coll_bench --ranks 4 rc=$? $(( $(date +%s) - t0 ))s" | tee -a "$OUT/summary.txt"
# The host's launch cost out (CUDA graphs of 10 calls) for the small sizes; 512 KiB FIFO slots
# (NCCL's Simple step) against the default for the large ones.
t0=$(date +%s)
timeout -k 5 25 "$carry/bin/coll_bench" --ranks 4 --min 8 --max 64K --iters 10 --warmup 3 --graph 10 \
  --colls allreduce,allgather,reducescatter,alltoall > "$OUT/graph_n4.log" 2>&1
echo "coll_bench --ranks 4 --graph 10 rc=$? $(( $(date +%s) - t0 ))s" | tee -a "$OUT/summary.txt"
t0=$(date +%s)
timeout -k 5 25 "$carry/bin/coll_bench" --ranks 4 --min 16M --max 1G --iters 8 --warmup 2 --no-check \
  --slot-bytes 512K --colls allreduce,allgather,reducescatter,alltoall > "$OUT/slot512k_n4.log" 2>&1
echo "coll_bench --ranks 4 --slot-bytes 512K rc=$? $(( $(date +%s) - t0 ))s" | tee -a "$OUT/summary.txt"
t0=$(date +%s)
for f in classic_plans_4gpus large_buffers graph_replays several_streams two_communicators \
         missing_peer_times_out supports_and_load_errors one_process_per_gpu; do
  s=$(date +%s)
  lim=40; [ $f = classic_plans_4gpus ] && lim=${KILN_TEST_TIMEOUT:-240}
  timeout -k 5 $lim "$carry/bin/test_gpu_runtime" --jobs 1 --verbose \
    --filter "gpu_runtime/$f" > "$OUT/test.$f.log" 2>&1
  rc=$?
  printf 'test %-26s rc=%-4s %4ss  %s\n' "$f" "$rc" "$(( $(date +%s) - s ))" \
    "$(grep -E 'Synthesis' "$OUT/test.$f.log" | tail -1)" >> "$OUT/summary.txt"
done
for f in "$OUT"/test.*.log; do grep -H -A3 -E "FAIL|Assert|Timeout|Crash|signal" "$f" | head -8; done
(cd "$OUT" && tar czf logs.tgz *.log && rm -f test.*.log)
for f in graph_n4 slot512k_n4; do
  echo "==== $f: coll size(B) plan | nccl(us) busbw | baked(us) busbw err | interp(us) busbw err | speedup"
  awk '/^# [a-z]+, [0-9]+ ranks/ {c=$2} /^  +[0-9]/ {printf "%-6.6s %10s %-24.24s %8s %6s | %8s %6s %s | %8s %6s %s | %s\n", c, $1, $4, $5, $7, $8, $10, $11, $12, $14, $15, $NF}' "$OUT/$f.log"
  grep -E "rror|fail" "$OUT/$f.log" | head -3
done
echo "==== coll_n4: coll size(B) plan | nccl(us) busbw | baked(us) busbw err | interp(us) busbw err | speedup"
awk '/^# [a-z]+, [0-9]+ ranks/ {c=$2} /^  +[0-9]/ {printf "%-6.6s %10s %-24.24s %8s %6s | %8s %6s %s | %8s %6s %s | %s\n", c, $1, $4, $5, $7, $8, $10, $11, $12, $14, $15, $NF}' "$OUT/coll_n4.log"
grep -E "rror|fail" "$OUT/coll_n4.log" | head -5
echo "==== summary"
cat "$OUT/summary.txt"
