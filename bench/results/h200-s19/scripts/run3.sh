# s19 run 3: the library as committed at the end of session 19 (LL128 for one-shot segments past
# 128 KiB, to 256 KiB on 4 ranks and 1 MiB on 2; 4 ranks one-shot allreduce to 256 KiB; 2 ranks
# allgather and alltoall on the sym kernel at 512 KiB). Suites on 4 and 2 GPUs, the drop-in suite,
# graphs 16 B-16 MiB on 4 and 2 GPUs.
RUN=r3 . scripts/device-pre.sh
suite tests4 220 'sym_ll128_4gpus|sym_kernels_4gpus|sym_choice|sym_pdl|sym_streams|sym_rounds|sym_graph_replays|sym_group_peers|sym_empty_blocks|graph_replays|groups|one_process_per_gpu|two_communicators|sym_missing_peer_times_out'
grep -h -E "^\[PASS\]" $R/tests4.txt | sed 's/.*:://' | paste -sd' '
suite tests2 150 'sym_ll128_2gpus|sym_kernels_2gpus|baked_plans_2gpus|sym_direct|sym_choice' CUDA_VISIBLE_DEVICES=0,1
grep -h -E "^\[PASS\]" $R/tests2.txt | sed 's/.*:://' | paste -sd' '
LD_LIBRARY_PATH="$NCCL_LIB:$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 90 .carry/shim/test_gpu_shim --jobs 1 --verbose > $R/shim.txt 2>&1
rc=$?; pack; echo "shim rc=$rc"; grep -E "^\[FAIL|Synthesis" $R/shim.txt
G="--graph 10 --iters 10 --warmup 3 --factor 4 --min 16 --max 16M"
timeout 90 $B/coll_bench --ranks 4 $G --csv $R/g4.csv > $R/g4.txt 2>&1
pack
CUDA_VISIBLE_DEVICES=0,1 timeout 90 $B/coll_bench --ranks 2 $G --csv $R/g2.csv > $R/g2.txt 2>&1
pack
echo "== 4 GPUs"; rows $R/g4.csv
echo "== 2 GPUs"; rows $R/g2.csv
grep -h " e[1-9]" $R/*.txt | head -5
