#!/bin/bash
# The 8-rank checks in one call on a machine with 8 GPUs, from the archive of bench/device/pack.sh
# (carried as .carry): the GPU suites (every test, the 8-GPU sweeps included), coll_bench kiln vs NCCL on 8 GPUs with plans/n8 (eager, CUDA graphs, one process per
# GPU) and with the synthesized hgx-h100 plans (plans/n8/synth), then the drop-in under
# torchrun --nproc-per-node 8 with plans/n8. Logs and CSVs go to $OUT; a summary is printed last.
#   bench/device/n8-checks.sh [LIMIT_SECONDS]   (default 580)
set -u
cd "$(dirname "$0")/../.."
T0=$(date +%s)
LIMIT=${1:-580}
OUT=${OUT:-/tmp/kiln-8gpu}
[ -d .carry/bin ] || tar xJf .carry/pack.tar.xz -C .carry || exit 1
. bench/device/carry-libs.sh
device_env "$PWD/.carry/lib"
S=$OUT/summary.txt
mkdir -p "$OUT/logs" "$OUT/csv"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader > "$OUT/logs/gpus.txt" 2>&1
run() { # name timeout command...: runs under the time left, one summary line
  local name=$1 to=$2; shift 2
  local left=$((LIMIT - ($(date +%s) - T0)))
  [ "$left" -lt 15 ] && { echo "$name: skipped (no time left)" >> "$S"; return; }
  [ "$to" -gt "$left" ] && to=$left
  local s; s=$(date +%s)
  timeout -k 5 "$to" "$@" > "$OUT/logs/$name.log" 2>&1
  local rc=$?
  printf '%-28s rc=%-4s %4ss %s\n' "$name" "$rc" $(($(date +%s) - s)) \
    "$(grep -E 'Synthesis|rows with errors' "$OUT/logs/$name.log" | tail -1)" >> "$S"
}
# suite/test of the runtime's GPU suites (tests/gpu/test_gpu_SUITE)
for t in plans/classic_plans_8gpus plans/n8_plans_8gpus plans/synthesized_plans_8gpus sym/sym_kernels_8gpus \
         sym/sym_ll128_8gpus sym/sym_ll12_8gpus sym/sym_group_peers plans/large_buffers graphs/graph_replays \
         streams/several_streams streams/two_communicators faults/missing_peer_times_out \
         plans/one_process_per_gpu plans/supports_and_load_errors; do
  run "${t#*/}" 300 ".carry/bin/test_gpu_${t%%/*}" --jobs 1 --verbose --filter "gpu_$t"
done
B=.carry/bin/coll_bench
run bench-n8 120 $B --ranks 8 --plans plans/n8 --min 16 --max 1G --iters 10 --warmup 3 --csv "$OUT/csv/coll_n8.csv"
run graph-n8 60 $B --ranks 8 --plans plans/n8 --graph 10 --min 8 --max 4M --factor 8 --iters 20 --csv "$OUT/csv/graph_n8.csv"
run mp-n8 120 $B --ranks 8 --plans plans/n8 --mp --min 16 --max 1G --iters 10 --warmup 3 --csv "$OUT/csv/mp_n8.csv"
for c in allgather reducescatter allreduce alltoall; do
  run "synth-$c" 60 $B --ranks 8 --plans plans/n8/synth --plan "kiln-hgx-h100-$c" --colls "$c" --min 1K --max 1G --factor 16 --iters 5
done
run shim 200 env GPUS=8 KILN_PLANS=plans/n8 SIZES=8,1K,64K,1M,16M,256M \
  DTYPES=float32,bfloat16,float16,float64,int8,uint8,int32,int64,bool OUT="$OUT/shim" bash bench/device/dropin-torch.sh
echo "==== $(cat "$OUT/logs/gpus.txt" | head -1), $(($(date +%s) - T0)) s"
cat "$S"
