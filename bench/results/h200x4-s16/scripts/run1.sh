# s16 run 1: the LL forms' sends load every peer's part before the first line goes out
# (reducescatter, alltoall, two-shot allreduce; B, this build) against one load after each store
# (A: session 15's coll_bench, carried as coll_bench_A), alternating A, B three times: graphs,
# 4 GPUs, plain buffers and windows, 16 B-1 MiB; 2 GPUs 16 B-64 KiB. The suites of the LL forms.
RUN=r1 . scripts/device-pre.sh
cat $OUT/gpus.txt
suite tests4 240 'sym_kernels_4gpus|sym_choice|sym_rounds|sym_pdl|sym_graph_replays|sym_streams|sym_empty_blocks'
CUDA_VISIBLE_DEVICES=0,1 suite tests2 90 'sym_kernels_2gpus|sym_pdl|sym_streams'
G="--graph 10 --iters 10 --warmup 3 --factor 4"
for i in 1 2 3; do
  for v in A B; do
    bin=$B/coll_bench; [ $v = A ] && bin=$B/coll_bench_A
    timeout 40 $bin --ranks 4 $G --min 16 --max 1M --csv $R/g4_${v}_$i.csv > $R/g4_${v}_$i.txt 2>&1
    timeout 40 $bin --ranks 4 $G --min 16 --max 1M --window --csv $R/w4_${v}_$i.csv > $R/w4_${v}_$i.txt 2>&1
    [ $i -le 2 ] && CUDA_VISIBLE_DEVICES=0,1 timeout 30 $bin --ranks 2 $G --min 16 --max 64K --csv $R/g2_${v}_$i.csv > $R/g2_${v}_$i.txt 2>&1
  done
  pack
done
cd bench; PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
for c in g4 w4 g2; do
  echo "== $c: A session 15, B loads first: size A B NCCL B/A"
  $PY ab.py $R/${c}_A_*.csv -- $R/${c}_B_*.csv | paste -sd'|' | sed 's/|/ | /g'
done
