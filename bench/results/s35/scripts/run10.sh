# Run 10 (2x H200): quickstart's two plans (synthesized here from run 9's profile, r10plans/), run 9
# showed them 0.81-0.85x NCCL at 128-512 KiB eager where run 6b had every size faster: eager calls
# are bound by the host's launches (NCCL's eager rows moved 13-26 us between machines). The same
# plans eager and in CUDA graphs of 10 calls, in one call.
RUN=r10 . scripts/device-pre.sh
t0=$(date +%s)
for m in eager graph; do
  g=""; [ $m = graph ] && g="--graph 10 --iters 10 --warmup 3"
  timeout 100 $B/coll_bench --ranks 2 --colls allreduce --plans bench/results/s35/r10plans $g --min 8 --max 64M --csv $R/$m.csv > $R/$m.txt 2>&1
  echo "$m rc=$? ($(( $(date +%s) - t0 )) s)"; pack
  echo "== $m (size plan interp/nccl, sym)"; awk -F, 'NR > 1 { printf " %s %s/%s %s |", $7, $18, $10, $22 } END { print "" }' $R/$m.csv
done
cat $OUT/gpus.txt
