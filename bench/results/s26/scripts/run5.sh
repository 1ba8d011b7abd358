# Run 5 (2 GPUs: no 4-GPU kind was lent at the time): the build with the line forms' partial and misaligned lines in registers
# (kernels/primitives.cuh loadPart/storePart, kernels/sym.cuh load12/store12): the GPU suites that
# run the line forms and the plans' LL and LL128 lines (every dtype and op against the CPU), the
# drop-in's suite, then the graph table 16 B-1 MiB on 2 GPUs, the committed build (coll_bench_A)
# against this one, one after the other; then 8 ranks sharing the 2 GPUs (sym_kernels_8ranks_shared).
RUN=r5 . scripts/device-pre.sh
suite t 400 'sym_kernels_2gpus|sym_ll12_2gpus|sym_ll128_2gpus|sym_lines_apart|sym_choice|sym_kernels_exist|sym_pdl|sym_streams|sym_graph_replays|sym_rounds|sym_direct|sym_direct_choice|sym_direct_copy_engine|sym_group_peers|sym_group_peers_choice|sym_empty_blocks|sym_missing_peer_times_out|groups|graph_replays|several_streams|one_process_per_gpu|supports_and_load_errors|baked_plans_2gpus|plan_ll_stale_slots|synthesized_plans_2gpus|synthesized_plans_verified_at_runtime_fifo_depth|classic_plans_2gpus'
grep -h -E "^\[(PASS|FAIL|SKIP)" $R/t.txt | sed 's/.*:://' | grep -v disabled | paste -sd' '
RN=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
LD_LIBRARY_PATH="$(dirname $RN):$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 \
  KILN_TEST_REAL_NCCL=$RN timeout 120 .carry/shim/test_gpu_shim --verbose -j1 > $R/shim.txt 2>&1; echo "shim rc=$?"; pack
grep -h "Synthesis" $R/shim.txt
G="--ranks 2 --graph 10 --iters 10 --warmup 3 --factor 4 --min 16 --max 1M"
abruns 1 g2 $G
suite t8 150 'sym_kernels_8ranks_shared'
grep -h -E "^\[(PASS|FAIL|SKIP)" $R/t8.txt | sed 's/.*:://' | paste -sd' '
cat $OUT/gpus.txt
ab Ag2 Bg2
echo "== A"; rows $R/Ag2_1.csv
echo "== B"; rows $R/Bg2_1.csv
