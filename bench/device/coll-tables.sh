#!/bin/bash
# Collective benchmark on the GPU machine: kiln baked, kiln interpreted and NCCL side by side
# (bench/coll_bench.cu) on 2 and 4 GPUs for allreduce, allgather, reducescatter, alltoall, plus
# the primitive microbenchmarks (bench/prim_bench.cu). Binaries are built on the CPU machine and
# carried in .carry-gen/ (git-ignored; copy it to the GPU machine with the checkout):
#   bench/device/coll-tables.sh --pack BUILD_DIR   (CPU machine) fill .carry-gen/ from a build
#   bench/device/coll-tables.sh [--quick] [-- EXTRA coll_bench ARGS]   (GPU machine) run
# Writes CSV and SVG files and logs under $OUT (default /tmp/kiln-bench); prints the short table
# last. Takes 2-4 minutes (every step has a timeout; at most about 6 minutes).
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
carry="$here/.carry-gen"
. "$here/bench/device/carry-libs.sh"
if [ "${1:-}" = "--pack" ]; then
  build=${2:?usage: --pack BUILD_DIR}
  pack_bins "$carry" "$build/bench/coll_bench" "$build/bench/prim_bench"
  exit
fi
quick=0 explore=0
if [ "${1:-}" = "--quick" ]; then quick=1; shift; fi
if [ "${1:-}" = "--explore" ]; then explore=1; shift; fi
[ "${1:-}" = "--" ] && shift
device_env "$carry/lib"
OUT=${OUT:-/tmp/kiln-bench}
mkdir -p "$OUT"
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
card=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
echo "# $ngpu x $card, NCCL from $NCCL_LIB, NCCL_NVLS_ENABLE=0" | tee "$OUT/bench.log"
if [ $explore = 1 ]; then
  # Every baked plan at every size (to choose plans/baked's byte ranges), plus the primitives.
  # Each finished step's files go into $OUT/explore.tar at once, so a cut-off run keeps them.
  keep() { (cd "$OUT" && for f in "$@"; do [ -f "$f" ] && tar rf explore.tar "$f" && rm -f "$f"; done); }
  cb="$carry/bin/coll_bench"
  sw=(--sweep --min 8 --max 64M --iters 10 --warmup 2)
  timeout -k 5 60 "$carry/bin/prim_bench" --iters 5 --max 256M --csv "$OUT/prim.csv" > "$OUT/prim.log" 2>&1
  echo "prim rc=$?"
  grep -E "^(flag|hop-[a-z0-9]+|copy|reduce|ll|ll128) " "$OUT/prim.log" | grep -E "^flag| (1|16|64) " | head -60
  keep prim.log prim.csv
  # One process per collective: a plan that fails turns kiln off only for the rest of its process.
  for n in 4 2; do
    for c in allreduce allgather reducescatter alltoall; do
      timeout -k 5 30 "$cb" --ranks $n "${sw[@]}" --colls $c --csv "$OUT/sweep_n${n}_$c.csv" \
        > "$OUT/sweep_n${n}_$c.log" 2>&1
      echo "n$n $c rc=$?"
      keep sweep_n${n}_$c.log sweep_n${n}_$c.csv
    done
  done
  timeout -k 5 40 "$cb" --ranks 4 "${sw[@]}" --inplace --colls allreduce --csv "$OUT/sweep_n4_inplace.csv" \
    > "$OUT/sweep_n4_inplace.log" 2>&1; echo "n4 inplace rc=$?"
  keep sweep_n4_inplace.log sweep_n4_inplace.csv
  # Baked against interpreted on the same plan (Simple ring, LL one-shot), and bigger FIFO slots.
  ab=(--min 8 --max 64M --iters 10 --warmup 2 --colls allreduce --ranks 4)
  timeout -k 5 30 "$cb" "${ab[@]}" --min 1M --plan ring-allreduce-n4-c1-i16 > "$OUT/ab_ring.log" 2>&1; echo "ab ring rc=$?"
  timeout -k 5 30 "$cb" "${ab[@]}" --max 1M --plan oneshot-allreduce-n4-i1-LL > "$OUT/ab_oneshot.log" 2>&1; echo "ab oneshot rc=$?"
  timeout -k 5 30 "$cb" "${ab[@]}" --min 1M --plan ring-allreduce-n4-c1-i16 --slot-bytes 512K > "$OUT/ab_ring512k.log" 2>&1; echo "ab ring 512K rc=$?"
  keep ab_ring.log ab_oneshot.log ab_ring512k.log
  for f in sweep_n4_allreduce sweep_n4_allgather sweep_n4_reducescatter sweep_n4_alltoall sweep_n2_allreduce \
           sweep_n4_inplace ab_ring ab_oneshot ab_ring512k; do
    echo "== $f"
    tar xf "$OUT/explore.tar" -O $f.log 2>/dev/null | awk '/^  +[0-9]/ {printf "%s %s %s %s %s e%s/%s %s\n", $1, $4, $5, $8, $12, $11, $15, $NF} /rror|fail/ {print}' | head -60
  done
  exit 0
fi
sizes=(--min 8 --max 1G --iters 20 --warmup 5)
[ $quick = 1 ] && sizes=(--min 8 --max 64M --iters 10 --warmup 3)
cb="$carry/bin/coll_bench"
all=(--colls allreduce,allgather,reducescatter,alltoall)
timeout -k 5 60 "$carry/bin/prim_bench" --iters 5 --max 256M --csv "$OUT/prim.csv" > "$OUT/prim.log" 2>&1
echo "prim_bench rc=$?" | tee -a "$OUT/bench.log"
for n in 2 4; do
  [ "$ngpu" -ge $n ] || { echo "skip $n GPUs: only $ngpu" | tee -a "$OUT/bench.log"; continue; }
  # One process driving the GPUs (nccl-tests -g), every collective, 8 B..1 GiB.
  timeout -k 5 90 "$cb" --ranks $n "${sizes[@]}" "${all[@]}" --csv "$OUT/coll_n$n.csv" \
    --svg "$OUT/coll_n$n.svg" "$@" > "$OUT/coll_n$n.log" 2>&1
  echo "coll_bench --ranks $n rc=$?" | tee -a "$OUT/bench.log"
done
if [ "$ngpu" -ge 4 ]; then
  # The host's launch cost out (CUDA graphs of 10 calls), and one process per GPU (PyTorch's model).
  timeout -k 5 60 "$cb" --ranks 4 --min 8 --max 64M --iters 10 --warmup 3 --graph 10 "${all[@]}" \
    --csv "$OUT/graph_n4.csv" "$@" > "$OUT/graph_n4.log" 2>&1
  echo "coll_bench --ranks 4 --graph 10 rc=$?" | tee -a "$OUT/bench.log"
  timeout -k 5 60 "$cb" --ranks 4 --min 8 --max 256M --iters 10 --warmup 3 --mp --colls allreduce,allgather \
    --csv "$OUT/mp_n4.csv" "$@" > "$OUT/mp_n4.log" 2>&1
  echo "coll_bench --ranks 4 --mp rc=$?" | tee -a "$OUT/bench.log"
fi
(cd "$OUT" && tar czf logs.tgz coll_n*.log graph_n4.log mp_n4.log prim.log prim.csv graph_n4.csv mp_n4.csv 2>/dev/null
 rm -f prim.log graph_n4.csv mp_n4.csv prim.csv graph_n4.log mp_n4.log) # at most 8 files come back
echo "==== primitives (GPU0 -> GPU1)"
tar xzf "$OUT/logs.tgz" -O prim.log 2>/dev/null | grep -E "^(flag|copy +nvlink +(16|64) |ll +nvlink +(16|64) )" | head -16
for f in coll_n2 coll_n4 graph_n4 mp_n4; do
  tar xzf "$OUT/logs.tgz" -O $f.log > /tmp/kiln-$f.log 2>/dev/null || continue
  [ -s /tmp/kiln-$f.log ] || continue
  echo "==== $f: size(B) plan nccl(us) baked(us) interp(us) err(baked/interp) speedup"
  awk '/^# coll_bench/ {print} /^# [a-z]+, [0-9]+ ranks/ {print $2, $3, $4, $7, $8, $9, $10} /^  +[0-9]/ {printf "  %11s %-28.28s %8s %8s %8s %s/%s %s\n", $1, $4, $5, $8, $12, $11, $15, $NF}' /tmp/kiln-$f.log
  grep -E "error|fail|Error" /tmp/kiln-$f.log | grep -v "^# rows with errors: 0" | head -5
done
