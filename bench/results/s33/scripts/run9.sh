# Run 9 (2x H200): the final build: every runtime GPU suite that runs on 2 GPUs or ranks sharing
# them (all but the 4- and 8-GPU ones and the 8-ranks-shared sweeps), the drop-in's suite, and
# nvl_bench's push and pull ways after their loops were shared.
RUN=r9 . scripts/device-pre.sh
t0=$(date +%s)
suite t 540 'classic_plans_2gpus|baked_plans_2gpus|plan_files|sym_kernels_2gpus|sym_kernels_2ranks_shared|sym_kernels_4ranks_shared|sym_ll128_2gpus|sym_ll12_2gpus|sym_rounds|sym_rounds_2ranks_shared|sym_rounds_4ranks_shared|sym_pdl|sym_streams|sym_direct|sym_direct_copy_engine|sym_group_peers|sym_group_peers_choice|sym_choice|sym_kernels_exist|sym_direct_choice|window_forget|sym_empty_blocks|sym_graph_replays|synthesized_plans_verified_at_runtime_fifo_depth|synthesized_plans_2gpus|large_buffers|graph_replays|graph_replays_after_scratch_growth|scratch_grows_inside_a_capture|group_takes_the_capture_state_at_its_end|several_streams|two_communicators|groups|missing_peer_times_out|sym_missing_peer_times_out|abort_frees_after_kernels_leave_2gpus|abort_frees_after_kernels_leave_shared|null_buffers_and_calls_queued_before_an_abort_refused|comm_create_fails_on_every_rank_when_one_cannot|comm_create_agrees_on_one_rank|sym_lines_apart|plan_ll_stale_slots|calls_of_a_form_the_plan_does_not_claim_refused|failed_communicator_refuses_calls|plan_calls_past_2pow32|supports_and_load_errors|one_process_per_gpu' KILN_TEST_REQUIRE_GPUS=1
grep -h -E "^\[(PASS|FAIL|SKIP)" $R/t.txt | sed 's/.*:://' | paste -sd' '
echo "suites done ($(( $(date +%s) - t0 )) s)"
RN=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
LD_LIBRARY_PATH="$(dirname $RN):$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 \
  KILN_TEST_REAL_NCCL=$RN timeout 200 .carry/shim/test_gpu_shim --verbose -j1 > $R/shim.txt 2>&1; echo "shim rc=$? ($(( $(date +%s) - t0 )) s)"; pack
grep -h -E "^\[(FAIL)|Synthesis|Assert" $R/shim.txt | sed 's/.*:://' | paste -sd' '
timeout 60 $B/nvl_bench --gpus 2 --bytes 64M --iters 5 --only sm,smpull,rspull > $R/nvl.txt 2>&1; echo "nvl rc=$?"; pack
grep -E "WRONG" $R/nvl.txt; awk 'NR<=3 || /smpull|rspull/' $R/nvl.txt | head -12
