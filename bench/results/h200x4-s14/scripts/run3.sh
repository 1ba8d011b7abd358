# s14 run 3: the library as committed (run 1's LL receive, the interpreter's LL receive alike, the
# direct copies' 8 KiB per block, launches through kilnLaunchKernel): the GPU suites on 4 and 2
# GPUs (plan suites included: the interpreter and the baked kernels share the LL receive), the
# drop-in suite, PyTorch's symmetric memory under torchrun.
RUN=r3 . scripts/device-pre.sh
cat $OUT/gpus.txt
T="$B/test_gpu_runtime --verbose -j1"
timeout 330 $T --filter "gpu_runtime/@(sym_kernels_4gpus|sym_pdl|sym_streams|sym_rounds|sym_direct|sym_direct_copy_engine|sym_group_peers|sym_graph_replays|sym_empty_blocks|sym_choice|sym_direct_choice|sym_group_peers_choice|window_forget|baked_plans_4gpus|synthesized_plans_4gpus|classic_plans_4gpus|graph_replays|groups|several_streams|two_communicators|one_process_per_gpu|missing_peer_times_out|supports_and_load_errors)" > $R/tests4.txt 2>&1
rc=$?; pack; echo "tests4 rc=$rc"; grep -E "^\[(FAIL)|Synthesis|Assertion" $R/tests4.txt | head -12
CUDA_VISIBLE_DEVICES=0,1 timeout 100 $T --filter "gpu_runtime/@(sym_kernels_2gpus|sym_streams|sym_pdl|sym_group_peers|baked_plans_2gpus|synthesized_plans_2gpus|classic_plans_2gpus)" > $R/tests2.txt 2>&1
rc=$?; pack; echo "tests2 rc=$rc"; grep -E "^\[(FAIL)|Synthesis|Assertion" $R/tests2.txt | head -6
LD_LIBRARY_PATH="$NCCL_LIB:$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 90 .carry/shim/test_gpu_shim --jobs 1 --verbose > $R/shim.txt 2>&1
rc=$?; pack; echo "shim rc=$rc"; grep -E "^\[FAIL|Synthesis" $R/shim.txt
TORCH_SYMMMEM=NCCL LD_PRELOAD=$PWD/.carry/shim/libnccl.so.2 timeout 90 /opt/torch/.venv/bin/torchrun --nproc-per-node 4 bench/torch_symm_mem.py > $R/symm.txt 2>&1
rc=$?; pack; echo "torchrun rc=$rc"; grep -c "exact" $R/symm.txt; grep -v exact $R/symm.txt | grep -i -E "wrong|error|differ" | head -4
grep -h -E "^\[PASS\]" $R/tests4.txt $R/tests2.txt | sed 's/.*:://' | paste -sd' '
