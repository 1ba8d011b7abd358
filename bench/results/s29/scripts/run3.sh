# Run 3 (1x H200): the session's final build (interpreter: sum and avg with the op fixed, the other
# ops by selects; the flag forms' 1- and 2-byte types by selects; shared-GPU ranks without PDL;
# the new sym_graphs_8ranks_shared test): test_gpu_runtime whole as ctest runs it (--jobs 1),
# KILN_TEST_REQUIRE_GPUS=1: the seven suites of 8 ranks sharing the GPU, every dtype and op against
# the CPU; the rest skip.
RUN=r3 . scripts/device-pre.sh
start=$(date +%s)
timeout 570 $B/test_gpu_runtime --jobs 1 --verbose > $R/all.txt 2>&1
echo "test_gpu_runtime rc=$? in $(( $(date +%s) - start )) s"; pack
grep -E "^\[(FAIL|PASS)|Synthesis|graphs of" $R/all.txt
grep -E "^\[====\]" $R/all.txt
cat $OUT/gpus.txt
