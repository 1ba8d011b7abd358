# Run 4 (2x H200): reducescatter's round size on 2 GPUs (KILN_SYM_RS_ROUND_BYTES, 8 MiB, chosen
# on 2x H100 in session 9) at 2, 4 and 16 MiB against the default, reducescatter and allreduce
# 64 MiB-1 GiB, graphs, one process, twice alternating: the last round's local combine is not
# overlapped with a store (~8 µs of fixed cost measured at 128-256 MiB in run 1).
RUN=r4 . scripts/device-pre.sh
t0=$(date +%s)
A="--ranks 2 --graph 10 --iters 10 --warmup 3 --factor 2 --min 64M --max 1G --colls reducescatter,allreduce"
for i in 1 2; do
  for rb in 2 4 16; do
    KILN_SYM_RS_ROUND_BYTES=$((rb << 20)) timeout 100 $B/coll_bench $A --csv $R/A${rb}_$i.csv > $R/A${rb}_$i.txt 2>&1 || echo "A$rb $i rc=$?"
  done
  timeout 100 $B/coll_bench $A --csv $R/B_$i.csv > $R/B_$i.txt 2>&1 || echo "B $i rc=$?"
  for rb in 2 4 16; do cp $R/B_$i.csv $R/B${rb}_$i.csv; done
  pack
done
echo "($(( $(date +%s) - t0 )) s)"
for rb in 2 4 16; do ab B$rb A$rb kiln-sym; done
rows $R/B_2.csv
