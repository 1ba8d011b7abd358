# Run 2 (2x H200): where an eager 2-GPU call's host time goes (coll_bench --batch --host-time:
# queueing vs the group's end), with the launcher threads (default) and without
# (KILN_GROUP_THREADS=0: the calling thread launches on both GPUs), twice alternating.
RUN=r2 . scripts/device-pre.sh
t0=$(date +%s)
for i in 1 2; do
  KILN_GROUP_THREADS=0 timeout 60 $B/coll_bench --ranks 2 --batch --host-time --iters 20 --warmup 5 --factor 4 --min 16 --max 64K --colls allreduce,allgather --csv $R/Aeg_$i.csv > $R/Aeg_$i.txt 2>&1; echo "A$i rc=$?"
  timeout 60 $B/coll_bench --ranks 2 --batch --host-time --iters 20 --warmup 5 --factor 4 --min 16 --max 64K --colls allreduce,allgather --csv $R/Beg_$i.csv > $R/Beg_$i.txt 2>&1; echo "B$i rc=$?"
  pack
done
echo "($(( $(date +%s) - t0 )) s)"
cat $OUT/gpus.txt
for f in $R/Aeg_1.txt $R/Beg_1.txt; do echo "== $f"; grep "host:" $f | grep -v interp | grep -v baked | sed 's/#   host: //'; done
ab eg eg kiln-sym
for f in $R/Aeg_2.csv $R/Beg_2.csv; do echo "== $f"; rows $f; done
