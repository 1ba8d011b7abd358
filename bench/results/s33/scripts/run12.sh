# Run 12 (4x H200, lent in the session's last hour with ~7 device minutes left): the first 4-GPU
# table since session 26: kiln against NCCL 2.28.9, one process driving the 4 GPUs, graphs of 10,
# float sum, 16 B-1 GiB (g4), then a process per GPU (mp4) as time allows.
RUN=r12 . scripts/device-pre.sh
t0=$(date +%s)
G="--graph 10 --iters 10 --warmup 3 --factor 4"
timeout 150 $B/coll_bench --ranks 4 $G --min 16 --max 1G --csv $R/g4.csv > $R/g4.txt 2>&1; echo "g4 rc=$? ($(( $(date +%s) - t0 )) s)"; pack
cat $OUT/gpus.txt
echo "== g4"; rows $R/g4.csv
timeout 120 $B/coll_bench --ranks 4 --mp $G --min 16 --max 1G --csv $R/mp4.csv > $R/mp4.txt 2>&1; echo "mp4 rc=$? ($(( $(date +%s) - t0 )) s)"; pack
echo "== mp4"; rows $R/mp4.csv
