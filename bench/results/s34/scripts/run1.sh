# Run 1 (2x H200; no 4-GPU machine lent at the time): this session's build: the runtime suites that
# create and tear down communicators (commCollective now makes the window registration and the
# device communicator) and the 2-GPU kernel suites, the drop-in's suite under the real NCCL 2.28.9,
# and nvl_bench's pull ways (their sources built once since session 33's last commits, not run
# since).
RUN=r1 . scripts/device-pre.sh
t0=$(date +%s)
suite t 420 'sym_kernels_2gpus|sym_ll12_2gpus|sym_ll128_2gpus|baked_plans_2gpus|synthesized_plans_2gpus|groups|group_takes_the_capture_state_at_its_end|one_process_per_gpu|sym_group_peers|sym_rounds|comm_create_fails_on_every_rank_when_one_cannot|comm_create_agrees_on_one_rank|two_communicators|window_forget|abort_frees_after_kernels_leave_2gpus|abort_frees_after_kernels_leave_shared|failed_communicator_refuses_calls|sym_direct_copy_engine|sym_graph_replays|missing_peer_times_out|sym_missing_peer_times_out|null_buffers_and_calls_queued_before_an_abort_refused' KILN_TEST_REQUIRE_GPUS=1
grep -h -E "^\[(PASS|FAIL|SKIP)" $R/t.txt | sed 's/.*:://' | paste -sd' '
echo "suites done ($(( $(date +%s) - t0 )) s)"
RN=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
LD_LIBRARY_PATH="$(dirname $RN):$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 \
  KILN_TEST_REAL_NCCL=$RN timeout 120 .carry/shim/test_gpu_shim --verbose -j1 > $R/shim.txt 2>&1; echo "shim rc=$? ($(( $(date +%s) - t0 )) s)"; pack
grep -h -E "^\[(FAIL)|Synthesis|Assert" $R/shim.txt | sed 's/.*:://' | paste -sd' '
timeout 40 $B/nvl_bench --gpus 2 --bytes 64M --iters 5 --only sm,smpull,rspull > $R/nvl.txt 2>&1; echo "nvl rc=$?"; pack
grep -E "WRONG" $R/nvl.txt; awk 'NR<=3 || /smpull|rspull/' $R/nvl.txt | head -8
cat $OUT/gpus.txt
