# s17 run 10 (2 GPUs; 4-GPU kinds withdrawn): the library after the last review (the LL sends'
# part array sized by R: the LL kernel 76 registers instead of 92; prologue called from the
# Starts' begin; the block range shared with host/sym.c, kilnSymBlockElems) against e1b6dd7
# (A = coll_bench_H0) alternating three times, graphs, 2 GPUs 16 B-1 MiB; the 2-GPU suites.
RUN=r10 . scripts/device-pre.sh
cat $OUT/gpus.txt
CUDA_VISIBLE_DEVICES=0,1 suite tests2 150 'sym_kernels_2gpus|sym_streams|sym_pdl|sym_direct|sym_group_peers|sym_rounds|sym_graph_replays|sym_empty_blocks|sym_missing_peer_times_out|sym_choice|baked_plans_2gpus'
G="--graph 10 --iters 10 --warmup 3 --factor 4"
PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
for i in 1 2 3; do
  for v in A B; do
    bin=$B/coll_bench; [ $v = A ] && bin=$B/coll_bench_H0
    CUDA_VISIBLE_DEVICES=0,1 timeout 30 $bin --ranks 2 $G --min 16 --max 1M --csv $R/g2_${v}_$i.csv > $R/g2_${v}_$i.txt 2>&1
  done
done
pack
echo "== g2: A e1b6dd7 against B (B/A)"
(cd bench && $PY ab.py $R/g2_A_*.csv -- $R/g2_B_*.csv | awk 'NR>1 {printf "%s %s%s %s | ", substr($1,1,4), $2, $3, $NF} END {print ""}')
grep -h WRONG $R/*.txt | head -3
