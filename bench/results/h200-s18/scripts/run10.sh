# s18 run 10: the benchmark's graph boundary. coll_bench --graph N times each launch of a graph of N
# calls between two events; the first kernel of a graph starts without an overlapped launch.
# Graphs of 10 calls (the tables) against 100, 2 GPUs, 16 B-1 MiB, twice alternating; and the LL
# kernel alone in graphs of 20 and 100 (sym_probe, no events between launches).
RUN=r10 . scripts/device-pre.sh
for i in 1 2; do
  for n in 10 100; do
    CUDA_VISIBLE_DEVICES=0,1 timeout 60 $B/coll_bench --ranks 2 --graph $n --iters 10 --warmup 3 --factor 4 --min 16 --max 1M \
      --csv $R/g${n}_$i.csv > $R/g${n}_$i.txt 2>&1
  done
  pack
done
for k in 20 100; do for cb in ar:16 ar:4096 ar:65536 ag:16 ag:65536; do $B/sym_probe ${cb%:*} ${cb#*:} 2 $k; done; done > $R/sym.txt 2>&1
pack
PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
echo "== graphs of 10 against 100 (g100/g10)"
(cd bench && $PY ab.py $R/g10_*.csv -- $R/g100_*.csv | awk 'NR>1 {printf "%s %s%s %s | ", substr($1,1,4), $2, $3, $NF} END {print ""}')
echo "== g100, run 2"; rows $R/g100_2.csv
cat $R/sym.txt
