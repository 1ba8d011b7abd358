# Run 7 (2x H200): run 6's new test mended (its captures begun on both ranks' streams at once: the
# second capture_begin's stream synchronization had ended the first capture), on this build and
# on test_gpu_runtime_old (the library before the change), with the group suites again.
RUN=r7 . scripts/device-pre.sh
timeout 120 $B/test_gpu_runtime_old --verbose -j1 --filter 'gpu_runtime/group_takes_the_capture_state_at_its_end' > $R/old.txt 2>&1; echo "old rc=$?"; pack
grep -E "^\[(PASS|FAIL)|Assert|Synthesis|group's end" $R/old.txt | head -6
suite t 300 'group_takes_the_capture_state_at_its_end|groups|several_streams|sym_graphs_8ranks_shared|scratch_grows_inside_a_capture' KILN_TEST_REQUIRE_GPUS=1
grep -h -E "^\[(PASS|FAIL)" $R/t.txt | sed 's/.*:://' | paste -sd' '
