#!/bin/bash
# Collective benchmark on the GPU machine: kiln baked, kiln interpreted and NCCL side by side
# (bench/coll_bench.cu) on 2 and 4 GPUs for allreduce, allgather, reducescatter, alltoall, plus
# the primitive microbenchmarks (bench/prim_bench.cu). Binaries are built on the CPU machine and
# carried in .carry-gen/ (ignored by git):
#   scripts/device-bench.sh --pack BUILD_DIR   (CPU machine) fill .carry-gen/ from a build
#   scripts/device-bench.sh [--quick] [-- EXTRA coll_bench ARGS]   (GPU machine) run
# Writes CSV and SVG files and logs under $OUT (default /tmp/kiln-bench); prints the short table
# last. Takes about 2-4 minutes (--quick: sizes 8 B..64 MiB, fewer iterations).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
carry="$here/.carry-gen"
if [ "${1:-}" = "--pack" ]; then
  build=${2:?usage: --pack BUILD_DIR}
  rm -rf "$carry" && mkdir -p "$carry/bin" "$carry/lib"
  for b in coll_bench prim_bench; do
    cp "$build/bench/$b" "$carry/bin/" || { echo "no $build/bench/$b: build it first" >&2; exit 1; }
  done
  for b in "$carry"/bin/*; do ldd "$b" | awk '/=> \// {print $3}'; done | sort -u |
    grep -v -E '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s|libnccl|libresolv|libz|libxml2|libicu[a-z]*|liblzma)\.so' |
    while read -r l; do cp -L "$l" "$carry/lib/"; done
  strip --strip-debug "$carry"/bin/* # the GPU machine has libxml2 (and its deps) itself
  du -sh "$carry"
  exit 0
fi
quick=0 explore=0
if [ "${1:-}" = "--quick" ]; then quick=1; shift; fi
if [ "${1:-}" = "--explore" ]; then explore=1; shift; fi
[ "${1:-}" = "--" ] && shift
export NCCL_NVLS_ENABLE=0
NCCL_LIB=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
export LD_LIBRARY_PATH="$NCCL_LIB:$carry/lib:${LD_LIBRARY_PATH:-}"
OUT=${OUT:-/tmp/kiln-bench}
mkdir -p "$OUT"
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
card=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
echo "# $ngpu x $card, NCCL from $NCCL_LIB, NCCL_NVLS_ENABLE=0" | tee "$OUT/bench.log"
if [ $explore = 1 ]; then
  # Every baked plan at every size (to choose plans/baked's byte ranges), plus the primitives.
  cb="$carry/bin/coll_bench"
  sw=(--sweep --min 8 --max 64M --iters 10 --warmup 2)
  timeout -k 5 40 "$carry/bin/prim_bench" --iters 5 --max 256M --csv "$OUT/prim.csv" > "$OUT/prim.log" 2>&1
  echo "prim rc=$?"
  timeout -k 5 60 "$cb" --ranks 4 "${sw[@]}" --csv "$OUT/sweep_n4.csv" > "$OUT/sweep_n4.log" 2>&1; echo "n4 rc=$?"
  timeout -k 5 60 "$cb" --ranks 2 "${sw[@]}" --csv "$OUT/sweep_n2.csv" > "$OUT/sweep_n2.log" 2>&1; echo "n2 rc=$?"
  timeout -k 5 40 "$cb" --ranks 4 "${sw[@]}" --inplace --colls allreduce > "$OUT/sweep_n4_inplace.log" 2>&1; echo "n4 inplace rc=$?"
  timeout -k 5 40 "$cb" --ranks 4 "${sw[@]}" --min 1M --slot-bytes 512K --colls allreduce,allgather > "$OUT/sweep_n4_slot512k.log" 2>&1; echo "n4 512K rc=$?"
  (cd "$OUT" && tar czf explore.tgz *.log *.csv && rm -f *.log *.csv)
  tar xzf "$OUT/explore.tgz" -O prim.log | grep -E "^(flag|copy|ll)" | grep -E "flag| (1|16|64) " | head -24
  for f in sweep_n4 sweep_n2 sweep_n4_inplace sweep_n4_slot512k; do
    echo "== $f"
    tar xzf "$OUT/explore.tgz" -O $f.log | awk '/^# [a-z]+, [0-9]+ ranks/ {print $2} /^  +[0-9]/ {printf "%s %s %s %s e%s %s\n", $1, $4, $5, $8, $11, $NF} /rror|fail/ {print}' | head -120
  done
  exit 0
fi
sizes=(--min 8 --max 1G --iters 20 --warmup 5)
[ $quick = 1 ] && sizes=(--min 8 --max 64M --iters 10 --warmup 3)
timeout -k 5 60 "$carry/bin/prim_bench" --iters 10 --max 256M --csv "$OUT/prim.csv" >> "$OUT/bench.log" 2>&1
echo "prim_bench rc=$?" >> "$OUT/bench.log"
for n in 2 4; do
  [ "$ngpu" -ge $n ] || { echo "skip $n GPUs: only $ngpu" | tee -a "$OUT/bench.log"; continue; }
  timeout -k 5 150 "$carry/bin/coll_bench" --ranks $n "${sizes[@]}" \
    --colls allreduce,allgather,reducescatter,alltoall --csv "$OUT/coll_n$n.csv" --svg "$OUT/coll_n$n.svg" \
    "$@" > "$OUT/coll_n$n.log" 2>&1
  echo "coll_bench --ranks $n rc=$?" | tee -a "$OUT/bench.log"
done
echo "==== primitives"
grep -E "^(flag|copy +nvlink +(16|32)|ll +nvlink +(16|32)) " "$OUT/bench.log" | head -20
for n in 2 4; do
  [ -f "$OUT/coll_n$n.log" ] || continue
  echo "==== $n GPUs (size B, plan, NCCL us, baked us, interp us, errors, speedup)"
  grep -v "^#" "$OUT/coll_n$n.log" | awk 'NF>=10 {print}' | head -3 >/dev/null
  awk '/^# [a-z]+, [0-9]+ ranks/ {print $2} /^  +[0-9]/ {printf "  %12s %-30s %9s %9s %9s err=%s/%s %s\n", $1, $4, $5, $8, $12, $11, $15, $NF}' "$OUT/coll_n$n.log"
  grep -E "error|fail|Error" "$OUT/coll_n$n.log" | head -5
done
