# Run 13 (4x H200, the last device minutes): the final build's 4-GPU suites (as many as fit).
RUN=r13 . scripts/device-pre.sh
t0=$(date +%s)
suite t 230 'sym_kernels_4gpus|sym_ll12_4gpus|sym_ll128_4gpus|baked_plans_4gpus|synthesized_plans_4gpus|groups|group_takes_the_capture_state_at_its_end|one_process_per_gpu|sym_group_peers|sym_rounds' KILN_TEST_REQUIRE_GPUS=1
grep -h -E "^\[(PASS|FAIL)" $R/t.txt | sed 's/.*:://' | paste -sd' '
echo "($(( $(date +%s) - t0 )) s)"
