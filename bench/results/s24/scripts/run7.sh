# Run 7 (4 GPUs, lent again): the 4-GPU table with run 3's library and LL12 lines past 8 KiB of
# segment (the default after this run), graphs of 10, 16 B-1 GiB, NCCL in the same run.
RUN=r7 . scripts/device-pre.sh
export KILN_SYM_LL12_BYTES=8192
timeout 220 $B/coll_bench --ranks 4 --graph 10 --iters 10 --warmup 3 --factor 4 --min 16 --max 1G --csv $R/g4.csv > $R/g4.txt 2>&1
echo "g4 rc=$?"; pack
rows $R/g4.csv
