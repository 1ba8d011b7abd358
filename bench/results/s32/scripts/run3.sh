# Run 3 (1x H200): after the audits' mends (baked plans' structs renamed plan_<ident>, the
# registry's forms from the buffers, creation agreed on step by step, NULL buffers and calls
# queued before an abort refused): the new tests and the plan suites that run baked kernels and
# the interpreter (ranks sharing the GPU), then the baked table's entries as the build sees them.
RUN=r3 . scripts/device-pre.sh
suite a 200 'null_buffers_and_calls_queued_before_an_abort_refused|comm_create_agrees_on_one_rank|abort_frees_after_kernels_leave_shared|scratch_grows_inside_a_capture|calls_of_a_form_the_plan_does_not_claim_refused|failed_communicator_refuses_calls|plan_calls_past_2pow32' KILN_TEST_REQUIRE_GPUS=1
grep -h -E "^\[(PASS|FAIL)" $R/a.txt | sed 's/.*:://' | paste -sd' '
suite b 420 'classic_plans_8ranks_shared|synthesized_plans_8ranks_shared|n8_plans_8ranks_shared|plan_files|sym_kernels_2ranks_shared' KILN_TEST_REQUIRE_GPUS=1
grep -h -E "^\[(PASS|FAIL)" $R/b.txt | sed 's/.*:://' | paste -sd' '
