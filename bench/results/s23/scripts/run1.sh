# Run 1: the code of 7b6d751 on the GPUs (session 22 ended without running it): the one-process
# suites (the clique's peer access now through peerAccessOn), graph_replays_after_scratch_growth
# (new in s22, never run), and 8 ranks sharing the GPUs (world_init_env_as, rank_sm_share).
RUN=r1 . scripts/device-pre.sh
suite main 420 'sym_kernels_4gpus|sym_kernels_2gpus|sym_ll128_4gpus|baked_plans_4gpus|classic_plans_4gpus|synthesized_plans_4gpus|one_process_per_gpu|two_communicators|groups|graph_replays|graph_replays_after_scratch_growth|several_streams|large_buffers|missing_peer_times_out|sym_missing_peer_times_out|plan_ll_stale_slots|supports_and_load_errors|sym_graph_replays|sym_rounds|sym_pdl|sym_streams|sym_direct|sym_direct_copy_engine|sym_group_peers|sym_group_peers_choice|sym_choice|sym_direct_choice|window_forget|sym_empty_blocks|sym_lines_apart|synthesized_plans_verified_at_runtime_fifo_depth'
grep -h -E "^\[(PASS|FAIL|SKIP)" $R/main.txt | sed 's/.*:://' | paste -sd' '
suite shared8 150 'sym_kernels_8ranks_shared|synthesized_plans_8ranks_shared'
grep -h -E "^\[(PASS|FAIL|SKIP)" $R/shared8.txt | sed 's/.*:://' | paste -sd' '
