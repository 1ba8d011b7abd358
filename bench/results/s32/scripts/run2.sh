# Run 2 (1x H200): kilnCommCreate/CreateAll agree through NCCL on each step's outcome (a rank
# failing alone made the others wait in the window registration for ever): a communicator of one
# rank; again the suites of run 1 (the shim and runtime rebuilt).
RUN=r2 . scripts/device-pre.sh
suite t 400 'comm_create_agrees_on_one_rank|scratch_grows_inside_a_capture|abort_frees_after_kernels_leave_shared|calls_of_a_form_the_plan_does_not_claim_refused|sym_kernels_2ranks_shared' KILN_TEST_REQUIRE_GPUS=1
grep -h -E "^\[(PASS|FAIL)|abort \(|Assert" $R/t.txt | sed 's/.*:://' | paste -sd' '
