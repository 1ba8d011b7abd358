# Run 6 (2x H200): a group's capture state read at kilnGroupEnd (new test
# group_takes_the_capture_state_at_its_end, on this build and on test_gpu_runtime_old: the same
# test against the library before the change), the group and graph suites, and the drop-in's
# suite (its stream joins now fail the group when CUDA refuses them).
RUN=r6 . scripts/device-pre.sh
t0=$(date +%s)
timeout 120 $B/test_gpu_runtime_old --verbose -j1 --filter 'gpu_runtime/group_takes_the_capture_state_at_its_end' > $R/old.txt 2>&1; echo "old rc=$?"; pack
grep -E "^\[(PASS|FAIL)|Assert|Synthesis" $R/old.txt | head -5
suite t 400 'group_takes_the_capture_state_at_its_end|groups|several_streams|graph_replays|graph_replays_after_scratch_growth|scratch_grows_inside_a_capture|sym_graphs_8ranks_shared|sym_kernels_2gpus|one_process_per_gpu|sym_pdl|null_buffers_and_calls_queued_before_an_abort_refused' KILN_TEST_REQUIRE_GPUS=1
grep -h -E "^\[(PASS|FAIL)" $R/t.txt | sed 's/.*:://' | paste -sd' '
echo "suites done ($(( $(date +%s) - t0 )) s)"
RN=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
LD_LIBRARY_PATH="$(dirname $RN):$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 \
  KILN_TEST_REAL_NCCL=$RN timeout 200 .carry/shim/test_gpu_shim --verbose -j1 > $R/shim.txt 2>&1; echo "shim rc=$? ($(( $(date +%s) - t0 )) s)"; pack
grep -h -E "^\[(PASS|FAIL)|Synthesis|Assert" $R/shim.txt | sed 's/.*:://' | paste -sd' '
cat $OUT/gpus.txt
