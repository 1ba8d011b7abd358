# s15 run 1 (a build with KILN_SYM_DIRECT_ONEPASS, taken out after this run): the direct
# allgather/alltoall copying every peer's part in one pass (loads first,
# KILN_SYM_DIRECT_ONEPASS=1, the build's default) against one peer after another (=0), same
# build, alternating processes, two runs each: windows and plain buffers (clique), graphs, 4 GPUs
# 256 KiB-64 MiB; 2 GPUs windows 4-64 MiB. Then the eager host time (2 and 4 GPUs), then the
# suites of the direct forms (default settings, and the old pass).
RUN=r1 . scripts/device-pre.sh
cat $OUT/gpus.txt
G="--graph 10 --iters 10 --warmup 3 --factor 2 --colls allgather,alltoall"
for i in 1 2; do
  for v in 0 1; do
    KILN_SYM_DIRECT_ONEPASS=$v timeout 40 $B/coll_bench --ranks 4 $G --min 256K --max 64M --window --csv $R/w4_${v}_$i.csv > $R/w4_${v}_$i.txt 2>&1
    KILN_SYM_DIRECT_ONEPASS=$v timeout 40 $B/coll_bench --ranks 4 $G --min 1M --max 64M --csv $R/g4_${v}_$i.csv > $R/g4_${v}_$i.txt 2>&1
    KILN_SYM_DIRECT_ONEPASS=$v CUDA_VISIBLE_DEVICES=0,1 timeout 30 $B/coll_bench --ranks 2 $G --min 4M --max 64M --window --csv $R/w2_${v}_$i.csv > $R/w2_${v}_$i.txt 2>&1
  done
  pack
done
E="--colls allreduce --min 8 --max 64K --factor 4 --batch --iters 200 --warmup 20"
CUDA_VISIBLE_DEVICES=0,1 timeout 30 $B/coll_bench --ranks 2 $E --host-time --csv $R/e2h.csv > $R/e2h.txt 2>&1
timeout 30 $B/coll_bench --ranks 4 $E --host-time --csv $R/e4h.csv > $R/e4h.txt 2>&1
pack
suite direct4 200 'sym_direct|sym_direct_choice|sym_group_peers|sym_group_peers_choice|sym_kernels_4gpus'
suite direct4_old 120 'sym_direct|sym_group_peers' KILN_SYM_DIRECT_ONEPASS=0
cd bench; PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
for c in w4 g4 w2; do
  echo "== $c: A one peer after another (=0), B one pass (=1): size A B B/A"
  $PY ab.py --col kiln-sym $R/${c}_0_*.csv -- $R/${c}_1_*.csv | paste -sd'|' | sed 's/|/ | /g'
done
echo "== NCCL (windows, run 1)"; rows $R/w4_1_1.csv
echo "== eager host time"; tail -12 $R/e2h.txt; tail -12 $R/e4h.txt
