# s16 run 3: the LL sends of alltoall, graphs, small sizes, four builds alternating three times
# (4 GPUs 16 B-1 MiB plain buffers, 2 GPUs 16 B-64 KiB twice): A session 15; B run 2's (a kernel
# per form, every send's loads first, alltoall's own piece loaded with the peers'); D1 as B but
# alltoall as in A (a load, then its store, peer after peer); D2 as B but alltoall's own piece
# loaded after the lines went out.
RUN=r3 . scripts/device-pre.sh
cat $OUT/gpus.txt
G="--graph 10 --iters 10 --warmup 3 --factor 4"
for i in 1 2 3; do
  for v in A B D1 D2; do
    timeout 40 $B/coll_bench_$v --ranks 4 $G --min 16 --max 1M --csv $R/g4_${v}_$i.csv > $R/g4_${v}_$i.txt 2>&1
    [ $i -le 2 ] && CUDA_VISIBLE_DEVICES=0,1 timeout 30 $B/coll_bench_$v --ranks 2 $G --min 16 --max 64K --csv $R/g2_${v}_$i.csv > $R/g2_${v}_$i.txt 2>&1
  done
  pack
done
cd bench; PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
for c in g4 g2; do
  for v in B D1 D2; do
    echo "== $c: A against $v"
    $PY ab.py $R/${c}_A_*.csv -- $R/${c}_${v}_*.csv | awk 'NR>1 {printf "%s %s%s %s | ", substr($1,1,4), $2, $3, $NF} END {print ""}'
  done
done
