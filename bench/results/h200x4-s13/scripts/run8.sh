# s13 run 8: the symmetric suites after their case loops became one iterator (symCases): the same
# numbers of calls checked as before (run 3) and passing.
. scripts/device-pre.sh
cat $OUT/gpus.txt
T="$B/test_gpu_runtime --verbose -j1"
timeout 200 $T --filter "gpu_runtime/@(sym_kernels_4gpus|sym_rounds|sym_direct|sym_direct_copy_engine|sym_group_peers)" > $OUT/tests4.txt 2>&1
echo "tests4 rc=$?"; grep -E "^\[(PASS|FAIL)|Synthesis|Assertion|GPUs:" $OUT/tests4.txt | head -14
CUDA_VISIBLE_DEVICES=0,1 timeout 60 $T --filter "gpu_runtime/sym_kernels_2gpus" > $OUT/tests2.txt 2>&1
echo "tests2 rc=$?"; grep -E "Synthesis|GPUs:" $OUT/tests2.txt
