# Run 6 (the same 2x H200 machine, warm, right after run 5, whose suite call ran out of its limit in
# classic_plans_8ranks_shared): the suites over the symmetric kernels that run on 2 GPUs and had not
# run with run 3's library. Given as the call's command:
RUN=r6 . scripts/device-pre.sh
suite t 200 'sym_pdl|sym_streams|sym_graph_replays|sym_rounds|one_process_per_gpu|sym_group_peers|sym_group_peers_choice|groups|graph_replays|sym_empty_blocks|sym_missing_peer_times_out|sym_choice|sym_direct'
grep -h -E "^\[(PASS|FAIL|SKIP)" $R/t.txt | sed 's/.*:://' | paste -sd' '
