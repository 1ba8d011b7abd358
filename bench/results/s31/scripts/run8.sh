# Run 8 (1x H200; the 2-GPU kind was withdrawn): after the review's mends (kilnRun and
# kilnPlanSupports decide a plan's forms in one place): the tests of those forms and the plan
# suites that go through kilnRun, ranks sharing the GPU.
RUN=r8 . scripts/device-pre.sh
suite t 280 'calls_of_a_form_the_plan_does_not_claim_refused|plan_calls_past_2pow32|synthesized_plans_8ranks_shared|classic_plans_8ranks_shared' KILN_TEST_REQUIRE_GPUS=1
grep -h -E "^\[(PASS|FAIL)" $R/t.txt | sed 's/.*:://' | paste -sd' '
