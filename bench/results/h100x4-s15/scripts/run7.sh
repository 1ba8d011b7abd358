# s15 run 7: the final library on a 4x H200 machine if one comes (an H100 one came): windows
# allgather/alltoall 1-16 MiB, the committed settings (B) against 8 KiB blocks everywhere without
# the first load (A: session 14's direct copies), alternating, two runs each; then the windows
# table 16 B-16 MiB, graphs 4 GPUs 16 B-1 GiB, eager 4 GPUs.
RUN=r7 . scripts/device-pre.sh
cat $OUT/gpus.txt
G="--graph 10 --iters 10 --warmup 3 --factor 2 --colls allgather,alltoall --window --min 1M --max 16M"
for i in 1 2; do
  KILN_SYM_DIRECT_BIG_BLOCK_BYTES=8192 KILN_SYM_DIRECT_PRELOAD=0 timeout 40 $B/coll_bench --ranks 4 $G --csv $R/ab_0_$i.csv > $R/ab_0_$i.txt 2>&1
  timeout 40 $B/coll_bench --ranks 4 $G --csv $R/ab_1_$i.csv > $R/ab_1_$i.txt 2>&1
done
pack
G="--graph 10 --iters 10 --warmup 3 --factor 4"
timeout 50 $B/coll_bench --ranks 4 $G --min 16 --max 16M --window --csv $R/w4.csv > $R/w4.txt 2>&1; rc=$?; pack; echo "w4 rc=$rc"
timeout 110 $B/coll_bench --ranks 4 $G --min 16 --max 1G --csv $R/g4.csv > $R/g4.txt 2>&1; rc=$?; pack; echo "g4 rc=$rc"
E="--colls allreduce,allgather,reducescatter,alltoall --min 8 --max 32K --factor 4 --batch --iters 200 --warmup 20"
timeout 40 $B/coll_bench --ranks 4 $E --csv $R/e4.csv > $R/e4.txt 2>&1; rc=$?; pack; echo "e4 rc=$rc"
cd bench; PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
echo "== windows: A session 14's direct copies, B as committed"
$PY ab.py --col kiln-sym $R/ab_0_*.csv -- $R/ab_1_*.csv | paste -sd'|' | sed 's/|/ | /g'
for c in w4 g4 e4; do echo "== $c (kiln/NCCL us, speed-up, errors)"; rows $R/$c.csv; done
