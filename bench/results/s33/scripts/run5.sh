# Run 5 (2x H200): reducescatter rounds of 32 and 64 MiB and of a whole staging half (0)
RUN=r5 . scripts/device-pre.sh
t0=$(date +%s)
A="--ranks 2 --graph 10 --iters 10 --warmup 3 --factor 2 --min 64M --max 1G --colls reducescatter,allreduce"
for i in 1 2; do
  for rb in 32 64 0; do
    KILN_SYM_RS_ROUND_BYTES=$((rb << 20)) timeout 100 $B/coll_bench $A --csv $R/A${rb}_$i.csv > $R/A${rb}_$i.txt 2>&1 || echo "A$rb $i rc=$?"
  done
  timeout 100 $B/coll_bench $A --csv $R/B_$i.csv > $R/B_$i.txt 2>&1 || echo "B $i rc=$?"
  for rb in 32 64 0; do cp $R/B_$i.csv $R/B${rb}_$i.csv; done
  pack
done
echo "($(( $(date +%s) - t0 )) s)"
for rb in 32 64 0; do ab B$rb A$rb kiln-sym; done
rows $R/B_2.csv
