# s18 run 8: the library as committed (B5 rebuilt: the LL forms trigger the next kernel once their
# lines are out; the spin test per poll as before). The 2-GPU suites and the drop-in suite on it;
# graphs 2 GPUs 16 B-1 MiB, A (c8577fc), B5 (run 5's build) and this one, twice alternating.
RUN=r8 . scripts/device-pre.sh
T="$B/test_gpu_runtime --verbose -j1"
S2="sym_kernels_2gpus|sym_streams|sym_pdl|sym_direct|sym_direct_copy_engine|sym_group_peers|sym_rounds|sym_graph_replays|sym_empty_blocks|sym_missing_peer_times_out|baked_plans_2gpus|sym_choice"
CUDA_VISIBLE_DEVICES=0,1 timeout 200 $T --filter "gpu_runtime/@($S2)" > $R/tests2.txt 2>&1
rc=$?; pack; echo "tests2 rc=$rc"; grep -E "^\[(FAIL)|Synthesis|Assertion" $R/tests2.txt | head -6
LD_LIBRARY_PATH="$NCCL_LIB:$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 90 .carry/shim/test_gpu_shim --jobs 1 --verbose > $R/shim.txt 2>&1
rc=$?; pack; echo "shim rc=$rc"; grep -E "^\[FAIL|Synthesis" $R/shim.txt
G="--graph 10 --iters 10 --warmup 3 --factor 4"
for i in 1 2; do
  for v in A B5 D; do
    bin=$B/coll_bench; [ $v != D ] && bin=$B/coll_bench_$v
    CUDA_VISIBLE_DEVICES=0,1 timeout 40 $bin --ranks 2 $G --min 16 --max 1M --csv $R/ab_${v}_$i.csv > $R/ab_${v}_$i.txt 2>&1
  done
  pack
done
PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
for v in B5 D; do
  echo "== A (c8577fc) against $v (graphs, 2 GPUs, plain): $v/A"
  (cd bench && $PY ab.py $R/ab_A_*.csv -- $R/ab_${v}_*.csv | awk 'NR>1 {printf "%s %s%s %s | ", substr($1,1,4), $2, $3, $NF} END {print ""}')
done
echo "== D, run 2"; rows $R/ab_D_2.csv
grep -h " e[1-9]" $R/*.txt | head -5
