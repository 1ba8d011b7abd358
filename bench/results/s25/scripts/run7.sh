# Run 7 (4 GPUs, asked as nvidia-h100-x4 for the H100 A/B owed since s24): the graph tables on 4
# and 2 GPUs again (same build as runs 3-6, 42eda21), LL12 from 32 KiB against 8, twice on 4 GPUs
# and twice on 2.
RUN=r7 . scripts/device-pre.sh
G="--graph 10 --iters 10 --warmup 3 --factor 4"
timeout 60 $B/coll_bench --ranks 4 $G --min 16 --max 1G --csv $R/g4.csv > $R/g4.txt 2>&1; echo "g4 rc=$?"; pack
(export CUDA_VISIBLE_DEVICES=0,1; timeout 60 $B/coll_bench --ranks 2 $G --min 16 --max 1G --csv $R/g2.csv > $R/g2.txt 2>&1; echo "g2 rc=$?"); pack
envab 2 l12 KILN_SYM_LL12_BYTES=32768 --ranks 4 $G --min 4K --max 1M
(export CUDA_VISIBLE_DEVICES=0,1; envab 2 l12n2 KILN_SYM_LL12_BYTES=32768 --ranks 2 $G --min 4K --max 1M)
cat $OUT/gpus.txt
echo "== g4"; rows $R/g4.csv
echo "== g2"; rows $R/g2.csv
ab Al12 Bl12; ab Al12n2 Bl12n2
