# Run 3 (1x H200), the final build: what runs plans through kilnRun (which now refuses a call of a
# form its plan does not claim) and what run 2 did not reach: every test of test_gpu_runtime but
# the symmetric-memory suites (those ran in runs 1-2 on the same kernels; the sym path does not
# go through kilnRun), with KILN_TEST_REQUIRE_GPUS=1; then plan_files on a synthesized plan and
# baked plans read from their files (what quickstart runs on one GPU).
RUN=r3 . scripts/device-pre.sh
t0=$(date +%s)
KILN_TEST_REQUIRE_GPUS=1 timeout 420 $B/test_gpu_runtime --jobs 1 --verbose --filter 'gpu_runtime/!(sym_*)' > $R/plans.txt 2>&1
echo "plans rc=$? ($(( $(date +%s) - t0 )) s)"
pack
grep -E "^\[(PASS|FAIL)|Synthesis" $R/plans.txt | tail -30
F=plans/baked/allreduce-n2-oneshot-ll-chain-i1.xml:plans/baked/allgather-n4-direct-ll-i8.xml:plans/baked/reducescatter-n4-oneshot-ll-gather-i4.xml
KILN_TEST_PLAN_FILES=$F KILN_TEST_REQUIRE_GPUS=1 timeout 120 $B/test_gpu_runtime --verbose --filter 'gpu_runtime/plan_files' > $R/plan_files.txt 2>&1
echo "plan_files rc=$? ($(( $(date +%s) - t0 )) s)"
grep -E "^\[(PASS|FAIL)|checked|pass|fail" $R/plan_files.txt | tail -8
pack
