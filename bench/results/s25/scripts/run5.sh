# Run 5 (4 GPUs): the GPU suites run 3 did not run, on the same build (the session's start,
# 42eda21), then the drop-in under PyTorch (torchrun, 4 processes: its suite, then PyTorch's
# collectives through NCCL, the shim turned off, and kiln, each result checked), then eager calls
# and symmetric windows, 4 GPUs, NCCL in the same run.
RUN=r5 . scripts/device-pre.sh
suite t 330 'sym_kernels_4gpus|sym_kernels_2gpus|sym_ll12_4gpus|sym_ll128_4gpus|sym_ll12_2gpus|sym_ll128_2gpus|sym_lines_apart|sym_choice|sym_kernels_exist|sym_pdl|sym_streams|sym_graph_replays|sym_rounds|sym_direct|sym_direct_choice|sym_direct_copy_engine|sym_group_peers|sym_group_peers_choice|sym_empty_blocks|sym_missing_peer_times_out|groups|graph_replays|several_streams|one_process_per_gpu|supports_and_load_errors|baked_plans_2gpus|synthesized_plans_2gpus|synthesized_plans_verified_at_runtime_fifo_depth|classic_plans_2gpus'
grep -h -E "^\[(PASS|FAIL|SKIP)" $R/t.txt | sed 's/.*:://' | grep -v disabled | paste -sd' '
(mkdir -p $R/shim; OUT=$R/shim GPUS=4 SIZES=1K,64K,1M,16M timeout 150 scripts/device-shim.sh > $R/shim.txt 2>&1; echo "shim rc=$?"); pack
tail -25 $R/shim/table.txt 2>/dev/null; grep -i "synthesis\|tested" $R/shim/decisions.txt 2>/dev/null | head -3
G="--iters 10 --warmup 3 --factor 4"
timeout 60 $B/coll_bench --ranks 4 --iters 20 --warmup 5 --factor 4 --min 16 --max 64K --csv $R/e4.csv > $R/e4.txt 2>&1; echo "e4 rc=$?"; pack
timeout 90 $B/coll_bench --ranks 4 --window --graph 10 $G --min 16 --max 1G --csv $R/w4.csv > $R/w4.txt 2>&1; echo "w4 rc=$?"; pack
cat $OUT/gpus.txt
echo "== e4"; rows $R/e4.csv
echo "== w4"; rows $R/w4.csv
