# Run 11 (2x H200): the final build's 8-ranks-shared sweeps (8 ranks over the 2 GPUs, every call
# issued through groups), which run 9 left out for time.
RUN=r11 . scripts/device-pre.sh
t0=$(date +%s)
suite t 520 'sym_kernels_8ranks_shared|sym_graphs_8ranks_shared|n8_plans_8ranks_shared|synthesized_plans_8ranks_shared|sym_rounds_8ranks_shared|sym_rs_output_off_alignment_8ranks_shared' KILN_TEST_REQUIRE_GPUS=1
grep -h -E "^\[(PASS|FAIL)" $R/t.txt | sed 's/.*:://' | paste -sd' '
echo "($(( $(date +%s) - t0 )) s)"
