# Run 10 (2x H200): after the review's mends (a queued default-stream call no longer switches
# device; the drop-in names a failed stream join): the group, stream and capture suites and the
# drop-in's suite.
RUN=r10 . scripts/device-pre.sh
t0=$(date +%s)
suite t 300 'groups|group_takes_the_capture_state_at_its_end|several_streams|sym_streams|sym_kernels_2gpus|one_process_per_gpu|graph_replays|sym_group_peers|two_communicators' KILN_TEST_REQUIRE_GPUS=1
grep -h -E "^\[(PASS|FAIL|SKIP)" $R/t.txt | sed 's/.*:://' | paste -sd' '
RN=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
LD_LIBRARY_PATH="$(dirname $RN):$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 \
  KILN_TEST_REAL_NCCL=$RN timeout 200 .carry/shim/test_gpu_shim --verbose -j1 > $R/shim.txt 2>&1; echo "shim rc=$? ($(( $(date +%s) - t0 )) s)"; pack
grep -h -E "^\[(FAIL)|Synthesis|Assert" $R/shim.txt | sed 's/.*:://' | paste -sd' '
