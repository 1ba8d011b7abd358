# s18 run 5: the LL forms trigger the next kernel once their lines are out (B, this build) against
# c8577fc (A) and against B with KILN_SYM_PDL_TRIGGER=end (Bend), graphs 2 GPUs 16 B-1 MiB, three
# times alternating; eager 2 GPUs A/B; the 2-GPU suites on B; the LL kernel alone (sym_probe) with
# the trigger moved and the spin's test every 64 polls (v6F) or none (v6D, for reference).
RUN=r5 . scripts/device-pre.sh
mkdir -p .carry/p && tar xf .carry/probes.tar -C .carry/p
G="--graph 10 --iters 10 --warmup 3 --factor 4 --min 16 --max 1M"
for i in 1 2; do
  for v in A B Bend; do
    bin=$B/coll_bench; [ $v = A ] && bin=$B/coll_bench_A
    env CUDA_VISIBLE_DEVICES=0,1 $([ $v = Bend ] && echo KILN_SYM_PDL_TRIGGER=end) timeout 40 $bin --ranks 2 $G \
      --csv $R/g2_${v}_$i.csv > $R/g2_${v}_$i.txt 2>&1
  done
  pack
done
for i in 1 2; do
  for v in A B; do
    bin=$B/coll_bench; [ $v = A ] && bin=$B/coll_bench_A
    CUDA_VISIBLE_DEVICES=0,1 timeout 60 $bin --ranks 2 --batch --iters 200 --warmup 20 --factor 4 --min 8 --max 32K \
      --colls allreduce,allgather --csv $R/e2_${v}_$i.csv > $R/e2_${v}_$i.txt 2>&1
  done
done
pack
CUDA_VISIBLE_DEVICES=0,1 suite tests2 240 'sym_kernels_2gpus|sym_pdl|sym_streams|sym_graph_replays|sym_missing_peer_times_out|sym_group_peers|sym_rounds|sym_choice|sym_empty_blocks|two_communicators|several_streams|groups|graph_replays'
{
for i in 1; do
  for v in v0 v6 v6F v6D; do
    for cb in ar:16 ar:256 ar:4096 ar:65536 ag:4096 ag:65536 rs:4096 a2a:65536; do
      echo -n "$v "; .carry/p/sp_$v ${cb%:*} ${cb#*:} 2
    done
  done
done
} > $R/sym.txt 2>&1
pack
cd bench; PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
for v in B Bend; do
  echo "== graphs: A against $v (size A $v NCCL $v/A)"
  $PY ab.py $R/g2_A_*.csv -- $R/g2_${v}_*.csv | awk 'NR>1 {printf "%s %s%s %s | ", substr($1,1,4), $2, $3, $NF} END {print ""}'
done
echo "== eager: A against B"
$PY ab.py $R/e2_A_*.csv -- $R/e2_B_*.csv | awk 'NR>1 {printf "%s %s%s %s | ", substr($1,1,4), $2, $3, $NF} END {print ""}'
echo "== B, run 1"; rows $R/g2_B_1.csv
awk '{k=$2" "$3" "$1; t[k]=t[k]" "$(NF-3)} END {for (k in t) print k, t[k]}' $R/sym.txt | sort -k1,1 -k2,2n -k3,3 | tr '\n' ';'
echo
grep -h " e[1-9]\|WRONG\|ERROR" $R/*.txt | head -5
