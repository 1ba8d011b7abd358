# Run 6 (1x H200): after the review's mends (creation's agreement: non-blocking settling, zeroed
# buffer, teardown without NCCL calls after a failed collective step): the creation and abort
# tests, the plan and symmetric suites of 2 ranks sharing the GPU.
RUN=r6 . scripts/device-pre.sh
suite a 300 'comm_create_agrees_on_one_rank|abort_frees_after_kernels_leave_shared|null_buffers_and_calls_queued_before_an_abort_refused|scratch_grows_inside_a_capture|calls_of_a_form_the_plan_does_not_claim_refused|sym_kernels_2ranks_shared|sym_rounds_2ranks_shared|synthesized_plans_8ranks_shared' KILN_TEST_REQUIRE_GPUS=1
grep -h -E "^\[(PASS|FAIL)" $R/a.txt | sed 's/.*:://' | paste -sd' '
