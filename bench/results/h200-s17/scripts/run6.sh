# s17 run 6 (4 GPUs): the library as committed (F of run 5, G dropped; one-shot allreduce and
# reducescatter as LL lines up to 256 KiB on 4 ranks): GPU suites of the symmetric kernels (4 and
# 2 GPUs), the drop-in suite, the tables (graphs plain 16 B-1 GiB on 4 and 2 GPUs, windows 16 B-16
# MiB, eager 4 GPUs), session 16's library (A) against it twice (graphs, 4 GPUs, 16 B-1 MiB).
RUN=r6 . scripts/device-pre.sh
cat $OUT/gpus.txt
T="$B/test_gpu_runtime --verbose -j1"
PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
ab() { (cd bench && $PY ab.py $1 -- $2 | awk 'NR>1 {printf "%s %s%s %s | ", substr($1,1,4), $2, $3, $NF} END {print ""}'); }
timeout 200 $T --filter "gpu_runtime/@(sym_kernels_4gpus|sym_pdl|sym_streams|sym_rounds|sym_choice|sym_graph_replays|sym_empty_blocks|sym_group_peers|sym_group_peers_choice|sym_missing_peer_times_out|baked_plans_4gpus|groups)" > $R/tests4.txt 2>&1
rc=$?; pack; echo "tests4 rc=$rc"; grep -E "^\[(FAIL)|Synthesis|Assertion" $R/tests4.txt | head -12
CUDA_VISIBLE_DEVICES=0,1 timeout 100 $T --filter "gpu_runtime/@(sym_kernels_2gpus|sym_streams|sym_pdl|sym_direct|sym_group_peers|sym_missing_peer_times_out|baked_plans_2gpus)" > $R/tests2.txt 2>&1
rc=$?; pack; echo "tests2 rc=$rc"; grep -E "^\[(FAIL)|Synthesis|Assertion" $R/tests2.txt | head -6
LD_LIBRARY_PATH="$NCCL_LIB:$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 90 .carry/shim/test_gpu_shim --jobs 1 --verbose > $R/shim.txt 2>&1
rc=$?; pack; echo "shim rc=$rc"; grep -E "^\[FAIL|Synthesis" $R/shim.txt
G="--graph 10 --iters 10 --warmup 3 --factor 4"
E="--colls allreduce,allgather,reducescatter,alltoall --min 8 --max 32K --factor 4 --batch --iters 200 --warmup 20"
timeout 110 $B/coll_bench --ranks 4 $G --min 16 --max 1G --csv $R/g4.csv --svg $R/g4.svg > $R/g4.txt 2>&1; rc=$?; pack; echo "g4 rc=$rc"
timeout 50 $B/coll_bench --ranks 4 $G --min 16 --max 16M --window --csv $R/w4.csv > $R/w4.txt 2>&1; rc=$?; pack; echo "w4 rc=$rc"
timeout 40 $B/coll_bench --ranks 4 $E --csv $R/e4.csv > $R/e4.txt 2>&1; rc=$?; pack; echo "e4 rc=$rc"
CUDA_VISIBLE_DEVICES=0,1 timeout 60 $B/coll_bench --ranks 2 $G --min 16 --max 1G --csv $R/g2.csv > $R/g2.txt 2>&1; rc=$?; pack; echo "g2 rc=$rc"
for c in g4 w4 e4 g2; do echo "== $c (kiln/NCCL us, speed-up, errors)"; rows $R/$c.csv; done
for i in 1 2; do
  for v in A B; do
    bin=$B/coll_bench; [ $v = A ] && bin=$B/coll_bench_A
    timeout 40 $bin --ranks 4 $G --min 16 --max 1M --csv $R/ab_${v}_$i.csv > $R/ab_${v}_$i.txt 2>&1
  done
done
pack; echo "== A session 16 against this library (graphs, 4 GPUs, plain): B/A"; ab "$R/ab_A_*.csv" "$R/ab_B_*.csv"
