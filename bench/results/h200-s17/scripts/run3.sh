# s17 run 3: four builds alternating three times (graphs, 2 GPUs, and 4 where lent, 16 B-1 MiB;
# windows 2 GPUs 64 KiB-16 MiB): A = session 16 (9c74bf9); C2 = run 2's C2; D = C2 and the flag and
# direct forms' argument-only setup (block range) before griddepcontrol.wait too (FlagStart);
# E (this build) = D and the LL body's loops over peers sized at compile time for 2 and 4 ranks
# (bodyLL<T, R>, chosen in the kernel by a.nranks). pdl_probe xchgio: an input load and output
# stores around the exchange. Suites on E.
RUN=r3 . scripts/device-pre.sh
cat $OUT/gpus.txt
NG=$(wc -l < $OUT/gpus.txt)
P=$B/pdl_probe
{
for i in 1 2; do
  $P xchg 2 1 64 10; $P xchgpre 2 1 64 10; $P xchgio 2 1 64 10; $P xchgiopre 2 1 64 10; $P xchgiopre 2 1 512 10
  [ $NG -ge 4 ] && { $P xchgpre 4 1 64 10; $P xchgiopre 4 1 64 10; }
done
} > $R/probe.txt 2>&1
cat $R/probe.txt
pack
[ $NG -ge 4 ] && suite tests4 300 'sym_kernels_4gpus|sym_choice|sym_rounds|sym_pdl|sym_graph_replays|sym_streams|sym_empty_blocks|sym_group_peers|sym_direct|sym_direct_choice|sym_missing_peer_times_out'
CUDA_VISIBLE_DEVICES=0,1 suite tests2 200 'sym_kernels_2gpus|sym_pdl|sym_streams|sym_group_peers|sym_missing_peer_times_out|sym_rounds|sym_graph_replays|sym_direct|sym_direct_copy_engine|sym_empty_blocks'
G="--graph 10 --iters 10 --warmup 3 --factor 4"
for i in 1 2 3; do
  for v in A C2 D E; do
    bin=$B/coll_bench; [ $v != E ] && bin=$B/coll_bench_$v
    [ $NG -ge 4 ] && timeout 40 $bin --ranks 4 $G --min 16 --max 1M --csv $R/g4_${v}_$i.csv > $R/g4_${v}_$i.txt 2>&1
    CUDA_VISIBLE_DEVICES=0,1 timeout 30 $bin --ranks 2 $G --min 16 --max 1M --csv $R/g2_${v}_$i.csv > $R/g2_${v}_$i.txt 2>&1
    CUDA_VISIBLE_DEVICES=0,1 timeout 30 $bin --ranks 2 $G --min 64K --max 16M --window --csv $R/w2_${v}_$i.csv > $R/w2_${v}_$i.txt 2>&1
  done
  pack
done
cd bench; PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
for c in $([ $NG -ge 4 ] && echo g4) g2 w2; do
  for v in C2 D E; do
    echo "== $c: A against $v (size $v/A)"
    $PY ab.py $R/${c}_A_*.csv -- $R/${c}_${v}_*.csv | awk 'NR>1 {printf "%s %s%s %s | ", substr($1,1,4), $2, $3, $NF} END {print ""}'
  done
done
echo "== g2: E kiln/NCCL"; rows $R/g2_E_1.csv
grep -h "WRONG" $R/*.txt | head -5
