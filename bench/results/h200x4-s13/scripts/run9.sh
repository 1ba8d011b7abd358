# s13 run 9: after the last review: sym_pdl's chain check through the suite's shared
# assert_times_sum, and coll_bench's host timing through monoUs.
. scripts/device-pre.sh
cat $OUT/gpus.txt
timeout 100 $B/test_gpu_runtime --verbose -j1 --filter "gpu_runtime/@(sym_pdl|sym_streams)" > $OUT/tests4.txt 2>&1
echo "tests4 rc=$?"; grep -E "^\[(PASS|FAIL)|Synthesis|Assertion" $OUT/tests4.txt
timeout 60 $B/coll_bench --ranks 4 --colls allreduce --min 16 --max 64K --factor 64 --batch --host-time --iters 200 --warmup 20 --csv $OUT/e4.csv > $OUT/e4.txt 2>&1
echo "eager rc=$?"; grep "host:" $OUT/e4.txt | grep -v interp | sed 's/#   host: //'
