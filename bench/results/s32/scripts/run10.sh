# Run 10 (1x H200): after the final review's mend (an exec's in-place form from
# kilnPlanInPlaceOnly, not a second copy in planGeometry): the suites of in-place and
# out-of-place plans through kilnRun, ranks sharing the GPU.
RUN=r10 . scripts/device-pre.sh
suite a 300 'calls_of_a_form_the_plan_does_not_claim_refused|classic_plans_8ranks_shared|scratch_grows_inside_a_capture|n8_plans_8ranks_shared' KILN_TEST_REQUIRE_GPUS=1
grep -h -E "^\[(PASS|FAIL)" $R/a.txt | sed 's/.*:://' | paste -sd' '
