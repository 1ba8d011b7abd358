# s17 run 9 (4 GPUs): the LL forms' bytes of a segment per block (KILN_SYM_BLOCK_BYTES: 1, 2
# (default), 4 KiB), graphs, 4 GPUs 4 KiB-1 MiB, alternating twice; 2 GPUs once.
RUN=r9 . scripts/device-pre.sh
cat $OUT/gpus.txt
G="--graph 10 --iters 10 --warmup 3 --factor 2"
PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
for i in 1 2; do
  for bb in 2048 1024 4096; do
    KILN_SYM_BLOCK_BYTES=$bb timeout 40 $B/coll_bench --ranks 4 $G --min 4K --max 1M --csv $R/bb${bb}_$i.csv > $R/bb${bb}_$i.txt 2>&1
    [ $i = 1 ] && CUDA_VISIBLE_DEVICES=0,1 KILN_SYM_BLOCK_BYTES=$bb timeout 40 $B/coll_bench --ranks 2 $G --min 4K --max 1M --csv $R/b2_${bb}.csv > $R/b2_${bb}.txt 2>&1
  done
  pack
done
for bb in 1024 4096; do
  echo "== 4 GPUs block bytes 2048 against $bb (B/A)"
  (cd bench && $PY ab.py $R/bb2048_*.csv -- $R/bb${bb}_*.csv | awk 'NR>1 {printf "%s %s%s %s | ", substr($1,1,4), $2, $3, $NF} END {print ""}')
  echo "== 2 GPUs block bytes 2048 against $bb (B/A)"
  (cd bench && $PY ab.py $R/b2_2048.csv -- $R/b2_${bb}.csv | awk 'NR>1 {printf "%s %s%s %s | ", substr($1,1,4), $2, $3, $NF} END {print ""}')
done
