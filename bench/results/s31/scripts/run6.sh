# Run 6 (2x H200): sym_missing_peer_times_out, updated (run 5 found it expecting calls after a
# timeout to launch; since session 30 a failed communicator refuses them), with the timeout
# tests around it.
RUN=r6 . scripts/device-pre.sh
suite t 120 'sym_missing_peer_times_out|missing_peer_times_out|failed_communicator_refuses_calls' KILN_TEST_REQUIRE_GPUS=1
grep -h -E "^\[(PASS|FAIL)" $R/t.txt | sed 's/.*:://' | paste -sd' '
