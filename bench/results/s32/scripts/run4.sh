# Run 4 (1x H200): run 3's first suites again after the NULL-buffer test's mend (it passed the
# call's buffers before call_prepare had set them).
RUN=r4 . scripts/device-pre.sh
suite a 200 'null_buffers_and_calls_queued_before_an_abort_refused|comm_create_agrees_on_one_rank|abort_frees_after_kernels_leave_shared|plan_files' KILN_TEST_REQUIRE_GPUS=1
grep -h -E "^\[(PASS|FAIL)" $R/a.txt | sed 's/.*:://' | paste -sd' '
