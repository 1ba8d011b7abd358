# Run 6 (4 GPUs): run 5's eager table had NCCL's first row (allgather 16 B) at 9.76 us against
# 29.7-30.6 for every other size: the eager table again, twice, with the collectives in another
# order, and timed as nccl-tests times it (--batch: 20 calls back to back between one event pair).
RUN=r6 . scripts/device-pre.sh
E="--ranks 4 --iters 20 --warmup 5 --factor 4 --min 16 --max 64K"
timeout 60 $B/coll_bench $E --csv $R/e4a.csv > $R/e4a.txt 2>&1; echo "e4a rc=$?"; pack
timeout 60 $B/coll_bench $E --colls allreduce,alltoall,reducescatter,allgather --csv $R/e4b.csv > $R/e4b.txt 2>&1; echo "e4b rc=$?"; pack
timeout 60 $B/coll_bench $E --batch --csv $R/e4c.csv > $R/e4c.txt 2>&1; echo "e4c rc=$?"; pack
cat $OUT/gpus.txt
for f in e4a e4b e4c; do echo "== $f"; rows $R/$f.csv; done
