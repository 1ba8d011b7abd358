# s13 run 7: the library after review (the launch passes the caller's arguments to the driver
# without a copy): the suites around the symmetric kernels' launch, the drop-in, eager allreduce.
. scripts/device-pre.sh
R=$OUT/r7; mkdir -p $R
pack() { tar czf $OUT/r7.tgz -C $OUT r7 gpus.txt; }
cat $OUT/gpus.txt
T="$B/test_gpu_runtime --verbose -j1"
timeout 200 $T --filter "gpu_runtime/@(sym_kernels_4gpus|sym_pdl|sym_streams|sym_graph_replays|sym_direct_copy_engine|sym_group_peers|groups|several_streams|two_communicators|one_process_per_gpu)" > $R/tests4.txt 2>&1
rc=$?; pack; echo "tests4 rc=$rc"; grep -E "^\[(PASS|FAIL)|Synthesis|Assertion" $R/tests4.txt | head -14
CUDA_VISIBLE_DEVICES=0,1 timeout 60 $T --filter "gpu_runtime/@(sym_kernels_2gpus|sym_streams)" > $R/tests2.txt 2>&1
rc=$?; pack; echo "tests2 rc=$rc"; grep -E "Synthesis" $R/tests2.txt
LD_LIBRARY_PATH="$NCCL_LIB:$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 120 .carry/shim/test_gpu_shim --jobs 1 --verbose > $R/shim.txt 2>&1
rc=$?; pack; echo "shim rc=$rc"; grep -E "Synthesis" $R/shim.txt
timeout 100 $B/coll_bench --ranks 4 --colls allreduce --min 8 --max 64K --factor 2 --batch --iters 200 --warmup 20 --csv $R/e4.csv > $R/e4.txt 2>&1
rc=$?; pack; echo "== eager 4 GPUs rc=$rc"; awk -F, 'NR>1 {printf "%s %s/%s x%s e%s | ", $7, $22, $10, $26, $25} END {print ""}' $R/e4.csv
