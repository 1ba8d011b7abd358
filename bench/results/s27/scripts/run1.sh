# Run 1 (2 GPUs): the build whose line forms load partial and misaligned lines' words branch-free
# (kernels/primitives.cuh loadWords, storeWords; loadPart, storePart, kernels/sym.cuh load12,
# store12) and whose GPU suites fork their process-per-GPU ranks with gpu_fork_ranks: the suites
# that run the line forms and the plans' lines (every dtype and op against the CPU on fresh random
# data), one_process_per_gpu, the drop-in's suite, and 8 ranks sharing the 2 GPUs.
RUN=r1 . scripts/device-pre.sh
suite t 420 'sym_kernels_2gpus|sym_ll12_2gpus|sym_ll128_2gpus|sym_lines_apart|sym_choice|sym_kernels_exist|sym_pdl|sym_streams|sym_graph_replays|sym_rounds|sym_direct|sym_direct_choice|sym_direct_copy_engine|sym_group_peers|sym_group_peers_choice|sym_empty_blocks|sym_missing_peer_times_out|groups|graph_replays|several_streams|one_process_per_gpu|supports_and_load_errors|baked_plans_2gpus|plan_ll_stale_slots|synthesized_plans_2gpus|synthesized_plans_verified_at_runtime_fifo_depth|classic_plans_2gpus'
grep -h -E "^\[(PASS|FAIL|SKIP)" $R/t.txt | sed 's/.*:://' | grep -v disabled | paste -sd' '
RN=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
LD_LIBRARY_PATH="$(dirname $RN):$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 \
  KILN_TEST_REAL_NCCL=$RN timeout 150 .carry/shim/test_gpu_shim --verbose -j1 > $R/shim.txt 2>&1; echo "shim rc=$?"; pack
grep -h -E "^\[(PASS|FAIL|SKIP)|Synthesis" $R/shim.txt | sed 's/.*:://' | paste -sd' '
suite t8 200 'sym_kernels_8ranks_shared|sym_ll12_8ranks_shared'
grep -h -E "^\[(PASS|FAIL|SKIP)" $R/t8.txt | sed 's/.*:://' | paste -sd' '
cat $OUT/gpus.txt
