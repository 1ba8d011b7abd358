# s18 run 6: C (this build) = B (the LL forms trigger the next kernel once their lines are out,
# run 5) and the LL receive's spin test once per 64 polls. A = c8577fc, B5 = run 5's build.
# The suites, the drop-in suite and PyTorch's symmetric memory under torchrun on C; graphs 16 B-1 MiB
# A, B5, C twice alternating; two-shot allreduce (LL2) A against C; C's tables (graphs plain 16 B-1 GiB,
# windows 16 B-16 MiB, eager 8 B-32 KiB).
RUN=r6 . scripts/device-pre.sh
NG=$(wc -l < $OUT/gpus.txt); [ $NG -gt 4 ] && NG=4
T="$B/test_gpu_runtime --verbose -j1"
S2="sym_kernels_2gpus|sym_streams|sym_pdl|sym_direct|sym_direct_copy_engine|sym_group_peers|sym_rounds|sym_graph_replays|sym_empty_blocks|sym_missing_peer_times_out|baked_plans_2gpus|sym_choice"
if [ $NG -ge 4 ]; then
  timeout 240 $T --filter "gpu_runtime/@(sym_kernels_4gpus|sym_pdl|sym_streams|sym_rounds|sym_direct|sym_direct_copy_engine|sym_group_peers|sym_graph_replays|sym_empty_blocks|sym_choice|sym_direct_choice|sym_group_peers_choice|window_forget|baked_plans_4gpus|graph_replays|groups|several_streams|two_communicators|one_process_per_gpu|sym_missing_peer_times_out)" > $R/tests4.txt 2>&1
  rc=$?; pack; echo "tests4 rc=$rc"; grep -E "^\[(FAIL)|Synthesis|Assertion" $R/tests4.txt | head -12
fi
CUDA_VISIBLE_DEVICES=0,1 timeout 200 $T --filter "gpu_runtime/@($S2)" > $R/tests2.txt 2>&1
rc=$?; pack; echo "tests2 rc=$rc"; grep -E "^\[(FAIL)|Synthesis|Assertion" $R/tests2.txt | head -6
grep -h -E "^\[PASS\]" $R/tests*.txt | sed 's/.*:://' | paste -sd' '
LD_LIBRARY_PATH="$NCCL_LIB:$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 90 .carry/shim/test_gpu_shim --jobs 1 --verbose > $R/shim.txt 2>&1
rc=$?; pack; echo "shim rc=$rc"; grep -E "^\[FAIL|Synthesis" $R/shim.txt
TORCH_SYMMMEM=NCCL LD_PRELOAD=$PWD/.carry/shim/libnccl.so.2 timeout 90 /opt/torch/.venv/bin/torchrun --nproc-per-node $NG bench/torch_symm_mem.py > $R/symm.txt 2>&1
rc=$?; pack; echo "torchrun rc=$rc"; grep -c "exact" $R/symm.txt; grep -v exact $R/symm.txt | grep -i -E "wrong|error|differ" | head -4
G="--graph 10 --iters 10 --warmup 3 --factor 4"
for i in 1 2; do
  for v in A B5 C; do
    bin=$B/coll_bench; [ $v != C ] && bin=$B/coll_bench_$v
    timeout 40 $bin --ranks $NG $G --min 16 --max 1M --csv $R/ab_${v}_$i.csv > $R/ab_${v}_$i.txt 2>&1
  done
  for v in A C; do
    bin=$B/coll_bench; [ $v != C ] && bin=$B/coll_bench_$v
    timeout 30 $bin --ranks $NG $G --min 16K --max 1M --sym twoshot --colls allreduce --csv $R/two_${v}_$i.csv > $R/two_${v}_$i.txt 2>&1
  done
  pack
done
E="--colls allreduce,allgather,reducescatter,alltoall --min 8 --max 32K --factor 4 --batch --iters 200 --warmup 20"
timeout 110 $B/coll_bench --ranks $NG $G --min 16 --max 1G --csv $R/g$NG.csv --svg $R/g$NG.svg > $R/g$NG.txt 2>&1; rc=$?; pack; echo "g$NG rc=$rc"
timeout 50 $B/coll_bench --ranks $NG $G --min 16 --max 16M --window --csv $R/w$NG.csv > $R/w$NG.txt 2>&1; rc=$?; pack; echo "w$NG rc=$rc"
timeout 40 $B/coll_bench --ranks $NG $E --csv $R/e$NG.csv > $R/e$NG.txt 2>&1; rc=$?; pack; echo "e$NG rc=$rc"
PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
for v in B5 C; do
  echo "== A (c8577fc) against $v (graphs, $NG GPUs, plain): $v/A"
  (cd bench && $PY ab.py $R/ab_A_*.csv -- $R/ab_${v}_*.csv | awk 'NR>1 {printf "%s %s%s %s | ", substr($1,1,4), $2, $3, $NF} END {print ""}')
done
echo "== two-shot allreduce A against C: C/A"
(cd bench && $PY ab.py $R/two_A_*.csv -- $R/two_C_*.csv | awk 'NR>1 {printf "%s %s%s %s | ", substr($1,1,4), $2, $3, $NF} END {print ""}')
for c in g$NG w$NG e$NG; do echo "== $c (kiln/NCCL us, speed-up, errors)"; rows $R/$c.csv; done
grep -h " e[1-9]" $R/*.txt | head -5
