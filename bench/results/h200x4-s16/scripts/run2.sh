# s16 run 2: the symmetric kernel split into a kernel per form (B: staged, LL, two-shot LL, direct;
# this build) against session 15's single kernel (A, coll_bench_A) and run 1's (C, coll_bench_C:
# the LL sends' loads first, one kernel), alternating A, C, B three times: graphs, 4 GPUs plain
# buffers and windows 16 B-1 MiB, 2 GPUs 16 B-64 KiB; A and B once at 4 MiB-1 GiB. First the GPU
# suites on B (every form is launched anew), 4 and 2 GPUs.
RUN=r2 . scripts/device-pre.sh
cat $OUT/gpus.txt
suite tests4 220 'sym_kernels_4gpus|sym_pdl|sym_streams|sym_rounds|sym_direct|sym_direct_copy_engine|sym_group_peers|sym_graph_replays|sym_empty_blocks|sym_choice|sym_direct_choice|sym_group_peers_choice|window_forget|graph_replays|groups|several_streams|two_communicators|one_process_per_gpu'
CUDA_VISIBLE_DEVICES=0,1 suite tests2 90 'sym_kernels_2gpus|sym_streams|sym_pdl|sym_direct|sym_group_peers'
G="--graph 10 --iters 10 --warmup 3 --factor 4"
for i in 1 2 3; do
  for v in A C B; do
    bin=$B/coll_bench; [ $v != B ] && bin=$B/coll_bench_$v
    timeout 40 $bin --ranks 4 $G --min 16 --max 1M --csv $R/g4_${v}_$i.csv > $R/g4_${v}_$i.txt 2>&1
    timeout 40 $bin --ranks 4 $G --min 16 --max 1M --window --csv $R/w4_${v}_$i.csv > $R/w4_${v}_$i.txt 2>&1
    [ $i -le 2 ] && CUDA_VISIBLE_DEVICES=0,1 timeout 30 $bin --ranks 2 $G --min 16 --max 64K --csv $R/g2_${v}_$i.csv > $R/g2_${v}_$i.txt 2>&1
  done
  pack
done
for v in A B; do
  bin=$B/coll_bench; [ $v = A ] && bin=$B/coll_bench_A
  timeout 80 $bin --ranks 4 $G --min 4M --max 1G --csv $R/l4_${v}_1.csv > $R/l4_${v}_1.txt 2>&1
done
pack
cd bench; PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
for c in g4 w4 g2; do
  echo "== $c: A session 15, B a kernel per form: size A B NCCL B/A"
  $PY ab.py $R/${c}_A_*.csv -- $R/${c}_B_*.csv | awk '{print $1, $2, $3, $NF}' | paste -sd'|' | sed 's/|/ | /g'
  echo "== $c: C loads first, one kernel, against B: size C B NCCL B/C"
  $PY ab.py $R/${c}_C_*.csv -- $R/${c}_B_*.csv | awk '{print $1, $2, $3, $NF}' | paste -sd'|' | sed 's/|/ | /g'
done
echo "== l4: A against B"; $PY ab.py $R/l4_A_*.csv -- $R/l4_B_*.csv | awk '{print $1, $2, $3, $NF}' | paste -sd'|' | sed 's/|/ | /g'
