# s15 run 5: direct allgather/alltoall loading each thread's first pack while the peers' arrival
# is awaited (KILN_SYM_DIRECT_PRELOAD=1, the build's default) against after it (=0), same build,
# alternating, three runs each: windows and plain buffers (clique), graphs, 4 GPUs 1-64 MiB;
# 2 GPUs windows 16-64 MiB. Suites of the direct forms.
RUN=r5 . scripts/device-pre.sh
cat $OUT/gpus.txt
G="--graph 10 --iters 10 --warmup 3 --factor 2 --colls allgather,alltoall"
for i in 1 2 3; do
  for v in 0 1; do
    KILN_SYM_DIRECT_PRELOAD=$v timeout 40 $B/coll_bench --ranks 4 $G --min 1M --max 64M --window --csv $R/w4_${v}_$i.csv > $R/w4_${v}_$i.txt 2>&1
    KILN_SYM_DIRECT_PRELOAD=$v timeout 40 $B/coll_bench --ranks 4 $G --min 1M --max 16M --csv $R/g4_${v}_$i.csv > $R/g4_${v}_$i.txt 2>&1
  done
  pack
done
for v in 0 1; do
  KILN_SYM_DIRECT_PRELOAD=$v CUDA_VISIBLE_DEVICES=0,1 timeout 30 $B/coll_bench --ranks 2 $G --min 16M --max 64M --window --csv $R/w2_${v}_1.csv > $R/w2_${v}_1.txt 2>&1
done
pack
suite tests4 200 'sym_direct|sym_direct_choice|sym_group_peers|sym_kernels_4gpus'
CUDA_VISIBLE_DEVICES=0,1 suite tests2 60 'sym_direct|sym_kernels_2gpus'
suite tests4_off 100 'sym_direct' KILN_SYM_DIRECT_PRELOAD=0
cd bench; PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
for c in w4 g4 w2; do
  echo "== $c: A loads after the wait (=0), B before (=1): size A B NCCL B/A"
  $PY ab.py --col kiln-sym $R/${c}_0_*.csv -- $R/${c}_1_*.csv | paste -sd'|' | sed 's/|/ | /g'
done
