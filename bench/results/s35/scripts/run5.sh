# Run 5 (2x H200): quickstart's synthesized allreduce (run 4: the switch2 sketch on the profiled
# topology, 1 instance, Simple, 2 threadblocks a rank) took 1478 us at 32 MiB against NCCL's 143:
# one threadblock per connection moves ~22 GB/s. The same synthesis with instances and protocols
# (r5plans/, synthesized here from run 4's local.xml: LL x1, LL x4, LL128 x8, Simple x16, x32),
# each loaded alone (coll_bench --plans: interpreted), eager as quickstart runs it, 8 B-64 MiB.
RUN=r5 . scripts/device-pre.sh
t0=$(date +%s)
for p in ll1 ll4 ll128x8 s16 s32; do
  timeout 100 $B/coll_bench --ranks 2 --colls allreduce --plans bench/results/s35/r5plans/$p.xml --min 8 --max 64M --csv $R/$p.csv > $R/$p.txt 2>&1
  echo "$p rc=$? ($(( $(date +%s) - t0 )) s)"; pack
done
for p in ll1 ll4 ll128x8 s16 s32; do
  echo "== $p (size interp/nccl us)"; awk -F, 'NR > 1 { printf " %s %s/%s e%s |", $7, $18, $10, $21 } END { print "" }' $R/$p.csv
done
cat $OUT/gpus.txt
