# s17 run 1: where a small graph call's time goes, and the LL forms' start.
# pdl_probe (scripts/pdl_probe.cu): time per kernel of a graph of 20 kernels, empty / with the
# sequence number / with one LL line exchanged with every peer, with and without PDL.
# Then three builds alternating three times, graphs, 4 GPUs (where lent) and 2 GPUs, 16 B-1 MiB:
# A = session 16's coll_bench (HEAD 9c74bf9); B1 = the LL forms read the sequence number in every
# thread, no barrier before the body; B2 (this build) = B1 and the LL bodies' argument-only setup
# before griddepcontrol.wait. The LL forms' suites on B2.
RUN=r1 . scripts/device-pre.sh
cat $OUT/gpus.txt
P=$B/pdl_probe
NG=$(wc -l < $OUT/gpus.txt)
{
for i in 1 2; do
  $P empty 1 0; $P empty 1 1; $P seq 1 1; $P empty $NG 1; $P seq $NG 1
  $P xchg 2 0; $P xchg 2 1; $P xchg 2 1 64; $P xchg 2 1 512 100
  [ $NG -ge 4 ] && { $P xchg 4 0; $P xchg 4 1; $P xchg 4 1 64; }
done
} > $R/probe.txt 2>&1
cat $R/probe.txt
pack
[ $NG -ge 4 ] && suite tests4 240 'sym_kernels_4gpus|sym_choice|sym_rounds|sym_pdl|sym_graph_replays|sym_streams|sym_empty_blocks|sym_group_peers'
CUDA_VISIBLE_DEVICES=0,1 suite tests2 90 'sym_kernels_2gpus|sym_pdl|sym_streams|sym_group_peers'
G="--graph 10 --iters 10 --warmup 3 --factor 4"
for i in 1 2 3; do
  for v in A B1 B2; do
    bin=$B/coll_bench; [ $v != B2 ] && bin=$B/coll_bench_$v
    [ $NG -ge 4 ] && timeout 40 $bin --ranks 4 $G --min 16 --max 1M --csv $R/g4_${v}_$i.csv > $R/g4_${v}_$i.txt 2>&1
    CUDA_VISIBLE_DEVICES=0,1 timeout 30 $bin --ranks 2 $G --min 16 --max 1M --csv $R/g2_${v}_$i.csv > $R/g2_${v}_$i.txt 2>&1
  done
  pack
done
cd bench; PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
for c in $([ $NG -ge 4 ] && echo g4) g2; do
  for v in B1 B2; do
    echo "== $c: A against $v (size A $v NCCL $v/A)"
    $PY ab.py $R/${c}_A_*.csv -- $R/${c}_${v}_*.csv | awk 'NR>1 {printf "%s %s%s %s | ", substr($1,1,4), $2, $3, $NF} END {print ""}'
  done
done
grep -h " e[1-9]" $R/*.txt | head -5
