# Run 1 (1x H200): a plan's scratch growing inside a stream capture (allocated there, relaxed
# capture mode, instead of failing the call) and kilnCommAbort (kernels waiting for a peer leave,
# later calls refused, the memory freed), ranks sharing the GPU; with them the suites that go
# through the same paths (graphs, plan calls, the 2-rank symmetric kernels).
RUN=r1 . scripts/device-pre.sh
suite t 400 'scratch_grows_inside_a_capture|abort_frees_after_kernels_leave_shared|calls_of_a_form_the_plan_does_not_claim_refused|sym_kernels_2ranks_shared|sym_graphs_8ranks_shared|n8_plans_8ranks_shared' KILN_TEST_REQUIRE_GPUS=1
grep -h -E "^\[(PASS|FAIL)|abort \(" $R/t.txt | sed 's/.*:://' | paste -sd' '
