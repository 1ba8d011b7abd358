# Run 8 (2x H200): the tables issue 5 asks for, at this session's runtime: kiln against NCCL
# 2.28.9 on 2 GPUs, float sum, 16 B-1 GiB: one process driving both GPUs, graphs of 10 (g2); a
# process per GPU, graphs (mp2); symmetric windows (w2); eager as nccl-tests times it (e2).
RUN=r8 . scripts/device-pre.sh
t0=$(date +%s)
G="--graph 10 --iters 10 --warmup 3 --factor 4"
timeout 110 $B/coll_bench --ranks 2 $G --min 16 --max 1G --csv $R/g2.csv > $R/g2.txt 2>&1; echo "g2 rc=$? ($(( $(date +%s) - t0 )) s)"; pack
timeout 90 $B/coll_bench --ranks 2 --mp $G --min 16 --max 1G --csv $R/mp2.csv > $R/mp2.txt 2>&1; echo "mp2 rc=$? ($(( $(date +%s) - t0 )) s)"; pack
timeout 70 $B/coll_bench --ranks 2 --window $G --min 16 --max 1G --csv $R/w2.csv > $R/w2.txt 2>&1; echo "w2 rc=$? ($(( $(date +%s) - t0 )) s)"; pack
timeout 60 $B/coll_bench --ranks 2 --batch --iters 20 --warmup 5 --factor 4 --min 16 --max 64K --csv $R/e2.csv > $R/e2.txt 2>&1; echo "e2 rc=$? ($(( $(date +%s) - t0 )) s)"; pack
cat $OUT/gpus.txt
for t in g2 mp2 w2 e2; do echo "== $t"; rows $R/$t.csv; done
