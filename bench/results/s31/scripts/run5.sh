# Run 5 (2x H200, the same build as run 4): the GPU suites of 2 GPUs run 4 left out (sessions
# 29-31's kernels and runtime had not run over NVLink), then the 2-GPU table with a process per
# GPU (--mp, as under torchrun) and on symmetric windows, graphs of 10, against NCCL.
RUN=r5 . scripts/device-pre.sh
t0=$(date +%s)
suite t 330 'sym_ll12_2gpus|sym_ll128_2gpus|sym_lines_apart|sym_streams|sym_graph_replays|sym_direct|sym_direct_copy_engine|sym_group_peers|sym_empty_blocks|sym_missing_peer_times_out|groups|graph_replays|graph_replays_after_scratch_growth|several_streams|two_communicators|missing_peer_times_out|plan_ll_stale_slots|plan_calls_past_2pow32|classic_plans_2gpus|large_buffers' KILN_TEST_REQUIRE_GPUS=1
grep -h -E "^\[(PASS|FAIL)" $R/t.txt | sed 's/.*:://' | paste -sd' '
echo "suites done ($(( $(date +%s) - t0 )) s)"
G="--graph 10 --iters 10 --warmup 3 --factor 4"
timeout 70 $B/coll_bench --ranks 2 --mp $G --min 16 --max 1G --csv $R/mp2.csv > $R/mp2.txt 2>&1; echo "mp2 rc=$? ($(( $(date +%s) - t0 )) s)"; pack
timeout 50 $B/coll_bench --ranks 2 --window $G --min 16 --max 1G --csv $R/w2.csv > $R/w2.txt 2>&1; echo "w2 rc=$? ($(( $(date +%s) - t0 )) s)"; pack
echo "== mp2"; rows $R/mp2.csv
echo "== w2"; rows $R/w2.csv
