# s17 run 2: the LL forms' start, four builds alternating three times (graphs, 2 GPUs, and 4 where
# lent, 16 B-1 MiB): A = session 16 (9c74bf9); B2 = run 1's B2 (every thread reads the sequence
# number; argument-only setup before griddepcontrol.wait); C1 = B2 and LL blocks of only as many
# threads as the block has lines (host/sym.c symThreads); C2 (this build) = C1 and the LL bodies
# send before looking at the abort flag, the sequence slots stored once the lines are out (no
# barrier or store at the kernel's end). pdl_probe with the arguments read before the wait (pre).
# Suites on C2, sym_missing_peer_times_out (new) among them.
RUN=r2 . scripts/device-pre.sh
cat $OUT/gpus.txt
NG=$(wc -l < $OUT/gpus.txt)
P=$B/pdl_probe
{
for i in 1 2; do
  $P empty 1 1; $P emptypre 1 1; $P seq 1 1; $P seqpre 1 1
  $P xchg 2 1; $P xchgpre 2 1; $P xchg 2 1 64; $P xchgpre 2 1 64; $P xchgpre 2 1 64 10; $P xchgpre 2 1 32
  [ $NG -ge 4 ] && { $P xchg 4 1; $P xchgpre 4 1; $P xchgpre 4 1 64; }
done
} > $R/probe.txt 2>&1
cat $R/probe.txt
pack
[ $NG -ge 4 ] && suite tests4 300 'sym_kernels_4gpus|sym_choice|sym_rounds|sym_pdl|sym_graph_replays|sym_streams|sym_empty_blocks|sym_group_peers|sym_missing_peer_times_out'
CUDA_VISIBLE_DEVICES=0,1 suite tests2 150 'sym_kernels_2gpus|sym_pdl|sym_streams|sym_group_peers|sym_missing_peer_times_out|sym_rounds|sym_graph_replays'
G="--graph 10 --iters 10 --warmup 3 --factor 4"
for i in 1 2 3; do
  for v in A B2 C1 C2; do
    bin=$B/coll_bench; [ $v != C2 ] && bin=$B/coll_bench_$v
    [ $NG -ge 4 ] && timeout 40 $bin --ranks 4 $G --min 16 --max 1M --csv $R/g4_${v}_$i.csv > $R/g4_${v}_$i.txt 2>&1
    CUDA_VISIBLE_DEVICES=0,1 timeout 30 $bin --ranks 2 $G --min 16 --max 1M --csv $R/g2_${v}_$i.csv > $R/g2_${v}_$i.txt 2>&1
  done
  pack
done
cd bench; PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
for c in $([ $NG -ge 4 ] && echo g4) g2; do
  for v in B2 C1 C2; do
    echo "== $c: A against $v (size $v/A)"
    $PY ab.py $R/${c}_A_*.csv -- $R/${c}_${v}_*.csv | awk 'NR>1 {printf "%s %s%s %s | ", substr($1,1,4), $2, $3, $NF} END {print ""}'
  done
  echo "== $c: C2 kiln/NCCL"; for f in $R/${c}_C2_1.csv; do rows $f; done
done
grep -h "WRONG" $R/*.txt | head -5
