# s17 run 4: the library as committed (E of run 3: LL loops sized for 2 and 4 ranks; the start of
# runs 1-3): the GPU suites, the drop-in suite, PyTorch's symmetric memory under torchrun, the
# tables (graphs plain 16 B-1 GiB, windows 16 B-16 MiB, eager 8 B-32 KiB; 2 GPUs too where 4 are
# lent), session 16's library (A) against this one twice (graphs 16 B-1 MiB), and the LL forms'
# upper bound (KILN_SYM_LL_BYTES, default 128 KiB) at 256 and 512 KiB against the default, 64 KiB-4 MiB.
# Run 5 is this script again on the library of 74e17a8 (LL up to 512 KiB on 2 ranks):
# RUN_NAME=r5 LLS="524288 1048576" (the first value the base of the comparison).
RUN=${RUN_NAME:-r4} . scripts/device-pre.sh
LLS=${LLS:-131072 262144 524288}
LL0=${LLS%% *}
cat $OUT/gpus.txt
NG=$(wc -l < $OUT/gpus.txt); [ $NG -gt 4 ] && NG=4
T="$B/test_gpu_runtime --verbose -j1"
S2="sym_kernels_2gpus|sym_streams|sym_pdl|sym_direct|sym_direct_copy_engine|sym_group_peers|sym_rounds|sym_graph_replays|sym_empty_blocks|sym_missing_peer_times_out|baked_plans_2gpus"
if [ $NG -ge 4 ]; then
  timeout 240 $T --filter "gpu_runtime/@(sym_kernels_4gpus|sym_pdl|sym_streams|sym_rounds|sym_direct|sym_direct_copy_engine|sym_group_peers|sym_graph_replays|sym_empty_blocks|sym_choice|sym_direct_choice|sym_group_peers_choice|window_forget|baked_plans_4gpus|graph_replays|groups|several_streams|two_communicators|one_process_per_gpu|sym_missing_peer_times_out)" > $R/tests4.txt 2>&1
  rc=$?; pack; echo "tests4 rc=$rc"; grep -E "^\[(FAIL)|Synthesis|Assertion" $R/tests4.txt | head -12
fi
CUDA_VISIBLE_DEVICES=0,1 timeout 150 $T --filter "gpu_runtime/@($S2)" > $R/tests2.txt 2>&1
rc=$?; pack; echo "tests2 rc=$rc"; grep -E "^\[(FAIL)|Synthesis|Assertion" $R/tests2.txt | head -6
grep -h -E "^\[PASS\]" $R/tests*.txt | sed 's/.*:://' | paste -sd' '
LD_LIBRARY_PATH="$NCCL_LIB:$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 90 .carry/shim/test_gpu_shim --jobs 1 --verbose > $R/shim.txt 2>&1
rc=$?; pack; echo "shim rc=$rc"; grep -E "^\[FAIL|Synthesis" $R/shim.txt
TORCH_SYMMMEM=NCCL LD_PRELOAD=$PWD/.carry/shim/libnccl.so.2 timeout 90 /opt/torch/.venv/bin/torchrun --nproc-per-node $NG bench/torch_symm_mem.py > $R/symm.txt 2>&1
rc=$?; pack; echo "torchrun rc=$rc"; grep -c "exact" $R/symm.txt; grep -v exact $R/symm.txt | grep -i -E "wrong|error|differ" | head -4
G="--graph 10 --iters 10 --warmup 3 --factor 4"
E="--colls allreduce,allgather,reducescatter,alltoall --min 8 --max 32K --factor 4 --batch --iters 200 --warmup 20"
timeout 110 $B/coll_bench --ranks $NG $G --min 16 --max 1G --csv $R/g$NG.csv --svg $R/g$NG.svg > $R/g$NG.txt 2>&1; rc=$?; pack; echo "g$NG rc=$rc"
timeout 50 $B/coll_bench --ranks $NG $G --min 16 --max 16M --window --csv $R/w$NG.csv > $R/w$NG.txt 2>&1; rc=$?; pack; echo "w$NG rc=$rc"
timeout 40 $B/coll_bench --ranks $NG $E --csv $R/e$NG.csv > $R/e$NG.txt 2>&1; rc=$?; pack; echo "e$NG rc=$rc"
if [ $NG -ge 4 ]; then
  CUDA_VISIBLE_DEVICES=0,1 timeout 30 $B/coll_bench --ranks 2 $G --min 16 --max 64K --csv $R/g2.csv > $R/g2.txt 2>&1; pack
  CUDA_VISIBLE_DEVICES=0,1 timeout 30 $B/coll_bench --ranks 2 $E --csv $R/e2.csv > $R/e2.txt 2>&1; pack
fi
for c in g$NG w$NG e$NG $([ $NG -ge 4 ] && echo g2 e2); do echo "== $c (kiln/NCCL us, speed-up, errors)"; rows $R/$c.csv; done
for i in 1 2; do
  for v in A B; do
    bin=$B/coll_bench; [ $v = A ] && bin=$B/coll_bench_A
    timeout 40 $bin --ranks $NG $G --min 16 --max 1M --csv $R/ab_${v}_$i.csv > $R/ab_${v}_$i.txt 2>&1
  done
  for ll in $LLS; do
    KILN_SYM_LL_BYTES=$ll timeout 40 $B/coll_bench --ranks $NG $G --min 64K --max 4M --csv $R/ll${ll}_$i.csv > $R/ll${ll}_$i.txt 2>&1
  done
done
pack
PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
echo "== A session 16 against B this library (graphs, $NG GPUs, plain): B/A"
(cd bench && $PY ab.py $R/ab_A_*.csv -- $R/ab_B_*.csv | awk 'NR>1 {printf "%s %s%s %s | ", substr($1,1,4), $2, $3, $NF} END {print ""}')
for ll in ${LLS#* }; do
  echo "== KILN_SYM_LL_BYTES $LL0 against $ll: B/A"
  (cd bench && $PY ab.py $R/ll${LL0}_*.csv -- $R/ll${ll}_*.csv | awk 'NR>1 {printf "%s %s%s %s | ", substr($1,1,4), $2, $3, $NF} END {print ""}')
done
