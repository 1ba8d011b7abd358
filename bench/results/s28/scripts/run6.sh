# Run 6 (1x H200): test_gpu_runtime whole, as scripts/test.sh's ctest runs it (--jobs 1), with
# KILN_TEST_REQUIRE_GPUS=1 as the device scripts set it: on one GPU it must pass, running the six
# suites of 8 ranks sharing the GPU and skipping the rest; its time is README's "~7 minutes".
RUN=r6 . scripts/device-pre.sh
start=$(date +%s)
timeout 560 $B/test_gpu_runtime --jobs 1 > $R/all.txt 2>&1
echo "test_gpu_runtime rc=$? in $(( $(date +%s) - start )) s"; pack
grep -E "^\[(FAIL|PASS)|Synthesis" $R/all.txt
cat $OUT/gpus.txt
