# Run 6: the new build on 4 GPUs, eager 8 B-32 KiB (timed as nccl-tests does) and graphs on
# symmetric windows (NCCL's symmetric kernels against kiln's) 16 B-16 MiB; same machine as run 4.
RUN=r6 . scripts/device-pre.sh
timeout 60 $B/coll_bench --ranks 4 --min 8 --max 32K --factor 4 --batch --iters 200 --warmup 20 --csv $R/e4.csv > $R/e4.txt 2>&1
echo "e4 rc=$?"; pack
timeout 90 $B/coll_bench --ranks 4 --graph 10 --iters 10 --warmup 3 --factor 4 --min 16 --max 16M --window --csv $R/w4.csv > $R/w4.txt 2>&1
echo "w4 rc=$?"; pack
for c in e4 w4; do echo "== $c"; rows $R/$c.csv; done
