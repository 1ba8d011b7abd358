# Run 2: LL12 lines (kernels/sym.cuh bodyLL12: 12 data bytes and one flag word per 16-byte line,
# for one-shot calls of elements of at most 4 bytes that went as LL lines). First the suites that
# check it (every one-shot segment as LL12 on 4 and 2 GPUs, the default sweep, the line forms kept
# apart, the geometry) and run 1's leftovers; then the same build with LL12 off (KILN_SYM_LL12=0,
# A) and on (B), alternating three times, graphs, 4 and 2 GPUs, 16 B-256 KiB.
RUN=r2 . scripts/device-pre.sh # (envab was defined here when it ran; device-pre.sh has it now)
suite ll12 300 'sym_ll12_4gpus|sym_ll12_2gpus|sym_kernels_4gpus|sym_lines_apart|sym_choice'
grep -h -E "^\[(PASS|FAIL)" $R/ll12.txt | sed 's/.*:://' | paste -sd' '
envab 3 4 KILN_SYM_LL12=0 --ranks 4 --graph 10 --iters 20 --warmup 5 --factor 4 --min 16 --max 256K
ab A4 B4
envab 3 2 KILN_SYM_LL12=0 --ranks 2 --graph 10 --iters 20 --warmup 5 --factor 4 --min 16 --max 256K
ab A2 B2
grep -h " e[1-9]" $R/*.txt | head -5
rows $R/B4_3.csv
suite rest 200 'one_process_per_gpu|two_communicators|several_streams|missing_peer_times_out|sym_missing_peer_times_out|plan_ll_stale_slots|supports_and_load_errors|sym_graph_replays|sym_rounds|sym_pdl|sym_streams|sym_direct|sym_direct_copy_engine|sym_group_peers|sym_group_peers_choice|sym_direct_choice|window_forget|sym_empty_blocks'
grep -h -E "^\[(PASS|FAIL)" $R/rest.txt | sed 's/.*:://' | paste -sd' '
