# s17 run 7 (4 GPUs): the library of run 6 again, for the small sizes' table with NCCL steadier
# than in run 6 (its NCCL times at 16 B-64 KiB spread over 8-17 us): graphs, 4 GPUs 16 B-1 MiB
# three times; allreduce 16 KiB-1 MiB one-shot against two-shot (--sym oneshot / twoshot), twice.
RUN=r7 . scripts/device-pre.sh
cat $OUT/gpus.txt
G="--graph 10 --iters 10 --warmup 3 --factor 4"
PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
for i in 1 2 3; do
  timeout 40 $B/coll_bench --ranks 4 $G --min 16 --max 1M --csv $R/g4_$i.csv > $R/g4_$i.txt 2>&1
done
pack
for i in 1 2; do
  for s in oneshot twoshot; do
    timeout 30 $B/coll_bench --ranks 4 $G --colls allreduce --min 16K --max 1M --factor 2 --sym $s --csv $R/ar_${s}_$i.csv > $R/ar_${s}_$i.txt 2>&1
  done
done
pack
for i in 1 2 3; do echo "== g4 run $i"; rows $R/g4_$i.csv; done
echo "== allreduce one-shot against two-shot (B/A)"
(cd bench && $PY ab.py --col kiln-sym $R/ar_oneshot_*.csv -- $R/ar_twoshot_*.csv)
