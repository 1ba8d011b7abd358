# Run 8 (4 GPUs): the 8-ranks-on-4-GPUs suites not yet run on this build (42eda21).
RUN=r8 . scripts/device-pre.sh
suite t 230 'n8_plans_8ranks_shared|sym_kernels_8ranks_shared|synthesized_plans_8ranks_shared'
grep -h -E "^\[(PASS|FAIL|SKIP)" $R/t.txt | sed 's/.*:://' | grep -v disabled | paste -sd' '
cat $OUT/gpus.txt
