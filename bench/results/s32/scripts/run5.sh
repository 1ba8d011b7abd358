# Run 5 (1x H200): the final build's symmetric-kernel suites of ranks sharing the GPU (every dtype
# and op against the CPU on fresh random data), those not run earlier this session.
RUN=r5 . scripts/device-pre.sh
suite s 560 'sym_kernels_4ranks_shared|sym_kernels_8ranks_shared|sym_ll128_8ranks_shared|sym_ll12_8ranks_shared|sym_rounds_2ranks_shared|sym_rounds_4ranks_shared|sym_rounds_8ranks_shared|sym_graphs_8ranks_shared|sym_rs_output_off_alignment_8ranks_shared|null_buffers_and_calls_queued_before_an_abort_refused|comm_create_agrees_on_one_rank' KILN_TEST_REQUIRE_GPUS=1
grep -h -E "^\[(PASS|FAIL)" $R/s.txt | sed 's/.*:://' | paste -sd' '
