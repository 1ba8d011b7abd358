# s14 run 4: the library as committed (as run 3): the suites run 3's time limit cut off (4 and 2
# GPUs), then the tables (graphs: 4 GPUs plain 16 B-1 GiB, windows 16 B-16 MiB, 2 GPUs plain
# 16 B-64 KiB; eager 8 B-64 KiB on 4 and 2 GPUs) and the plans' LL receive against the library
# before it (the baked and interpreted kernels' columns, old coll_bench from .carry/ab.tar.xz).
RUN=r4 . scripts/device-pre.sh
tar xJf .carry/ab.tar.xz -C .carry
A=$PWD/.carry/old/bin
cat $OUT/gpus.txt
T="$B/test_gpu_runtime --verbose -j1"
timeout 170 $T --filter "gpu_runtime/@(sym_kernels_4gpus|sym_pdl|sym_streams|sym_rounds|sym_direct_copy_engine|sym_group_peers|sym_graph_replays|sym_empty_blocks|sym_group_peers_choice|window_forget|synthesized_plans_4gpus|two_communicators)" > $R/tests4.txt 2>&1
rc=$?; pack; echo "tests4 rc=$rc"; grep -E "^\[FAIL|Synthesis|Assertion" $R/tests4.txt | head -12
CUDA_VISIBLE_DEVICES=0,1 timeout 45 $T --filter "gpu_runtime/@(sym_kernels_2gpus|sym_streams|sym_pdl|synthesized_plans_2gpus)" > $R/tests2.txt 2>&1
rc=$?; pack; echo "tests2 rc=$rc"; grep -E "^\[FAIL|Synthesis|Assertion" $R/tests2.txt | head -6
grep -h -E "^\[PASS\]" $R/tests4.txt $R/tests2.txt | sed 's/.*:://' | paste -sd' '
G="--graph 10 --iters 10 --warmup 3 --factor 4"
timeout 110 $B/coll_bench --ranks 4 $G --min 16 --max 1G --csv $R/g4.csv --svg $R/g4.svg > $R/g4.txt 2>&1; rc=$?; pack; echo "g4 rc=$rc"
timeout 50 $B/coll_bench --ranks 4 $G --min 16 --max 16M --window --csv $R/w4.csv > $R/w4.txt 2>&1; rc=$?; pack; echo "w4 rc=$rc"
CUDA_VISIBLE_DEVICES=0,1 timeout 30 $B/coll_bench --ranks 2 $G --min 16 --max 64K --csv $R/g2.csv > $R/g2.txt 2>&1; rc=$?; pack; echo "g2 rc=$rc"
E="--colls allreduce,allgather,reducescatter,alltoall --min 8 --max 64K --factor 4 --batch --iters 200 --warmup 20"
timeout 40 $B/coll_bench --ranks 4 $E --csv $R/e4.csv > $R/e4.txt 2>&1; rc=$?; pack; echo "e4 rc=$rc"
CUDA_VISIBLE_DEVICES=0,1 timeout 30 $B/coll_bench --ranks 2 $E --csv $R/e2.csv > $R/e2.txt 2>&1; rc=$?; pack; echo "e2 rc=$rc"
P="--graph 10 --iters 20 --warmup 5 --min 16 --max 64K --factor 4"
timeout 30 $A/coll_bench --ranks 4 $P --csv $R/p4_a_1.csv > $R/p4_a_1.txt 2>&1
timeout 30 $B/coll_bench --ranks 4 $P --csv $R/p4_b_1.csv > $R/p4_b_1.txt 2>&1
pack
cd bench; PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
for c in kiln-baked kiln-interp; do
  echo "== plans, 4 GPUs, graphs: $c, A before, B the LL receive re-reading missing lines together"
  ${PY:-python3} ab.py --col $c $R/p4_a_*.csv -- $R/p4_b_*.csv | awk '{print $1, $2$3, $4, $5, $NF}' | paste -sd'|' | sed 's/|/ | /g'
done
for c in g4 w4 g2 e4 e2; do echo "== $c (kiln/NCCL us, speed-up, errors)"; rows $R/$c.csv; done
