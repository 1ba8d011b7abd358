# Run 3 (4 GPUs): GPU suites that did not run on this library's build in session 25 or 26
# (large_buffers, classic_plans_8ranks_shared, classic_plans_4gpus), every result against the CPU.
RUN=r3 . scripts/device-pre.sh
export KILN_TEST_REQUIRE_GPUS=1
suite t1 200 'large_buffers'
suite t2 170 'classic_plans_8ranks_shared'
suite t3 260 'classic_plans_4gpus'
cat $OUT/gpus.txt
for t in t1 t2 t3; do grep -h -E "^\[(PASS|FAIL|SKIP)|Synthesis" $R/$t.txt | sed 's/.*:://' | grep -v disabled | paste -sd' '; done
