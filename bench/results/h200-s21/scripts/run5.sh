# Run 5: the new build's tables on 2 GPUs (GPUs 0-1), graphs, 16 B-1 GiB, and eager 8 B-32 KiB
# (timed as nccl-tests does), same machine as run 4.
RUN=r5 . scripts/device-pre.sh
export CUDA_VISIBLE_DEVICES=0,1
timeout 150 $B/coll_bench --ranks 2 --graph 10 --iters 10 --warmup 3 --factor 4 --min 16 --max 1G --csv $R/g2.csv > $R/g2.txt 2>&1
echo "g2 rc=$?"; pack
timeout 60 $B/coll_bench --ranks 2 --min 8 --max 32K --factor 4 --batch --iters 200 --warmup 20 --csv $R/e2.csv > $R/e2.txt 2>&1
echo "e2 rc=$?"; pack
for c in g2 e2; do echo "== $c"; rows $R/$c.csv; done
