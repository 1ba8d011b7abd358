# Run 2: where the direct plans' wrong sums of run 1 come from (scripts/shared_diag.c: placements,
# chunks and instances, dtypes, counts, protocols, rank counts); then a process per GPU
# (coll_bench --mp), CUDA graphs of 10 calls, 4 and 2 GPUs, 16 B-1 GiB, and eager at 16 B-64 KiB.
RUN=r2 . scripts/device-pre.sh
timeout 150 $B/shared_diag > $R/diag.txt 2>&1; echo "diag rc=$?"; pack
grep -v '^$' $R/diag.txt | head -70
timeout 220 $B/coll_bench --ranks 4 --mp --graph 10 --iters 10 --warmup 3 --factor 4 --min 16 --max 1G --csv $R/mpg4.csv > $R/mpg4.txt 2>&1
echo "mpg4 rc=$?"; pack; rows $R/mpg4.csv
(export CUDA_VISIBLE_DEVICES=0,1; timeout 160 $B/coll_bench --ranks 2 --mp --graph 10 --iters 10 --warmup 3 --factor 4 --min 16 --max 1G --csv $R/mpg2.csv > $R/mpg2.txt 2>&1; echo "mpg2 rc=$?")
pack; rows $R/mpg2.csv
timeout 60 $B/coll_bench --ranks 4 --mp --iters 20 --warmup 5 --factor 4 --min 16 --max 64K --csv $R/mpe4.csv > $R/mpe4.txt 2>&1
echo "mpe4 rc=$?"; pack; rows $R/mpe4.csv
