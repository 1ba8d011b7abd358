# s19 run 6: the library as committed at the end of session 19 (LL128 one-shot and two-shot). 4-GPU
# suites (windows and direct forms included), the drop-in suite, PyTorch's symmetric memory and
# torch collectives (1-4 MiB: two-shot LL128) under torchrun; graphs 16 B-16 MiB and windows 64 KiB-
# 16 MiB on 4 GPUs; then two thresholds tried: 2 GPUs one-shot LL128 to 4 MiB of segment
# (KILN_SYM_LL128_MAX_BYTES), 4 GPUs two-shot LL128 from 64 KiB shares (KILN_SYM_LL2_128_BYTES).
RUN=r6 . scripts/device-pre.sh
suite tests4 240 'sym_direct|sym_direct_copy_engine|sym_group_peers|sym_group_peers_choice|window_forget|sym_ll128_4gpus|sym_kernels_4gpus|sym_choice|sym_graph_replays|sym_rounds|sym_pdl|sym_streams|sym_empty_blocks|graph_replays|groups|one_process_per_gpu|two_communicators|sym_missing_peer_times_out'
grep -h -E "^\[PASS\]" $R/tests4.txt | sed 's/.*:://' | paste -sd' '
LD_LIBRARY_PATH="$NCCL_LIB:$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 90 .carry/shim/test_gpu_shim --jobs 1 --verbose > $R/shim.txt 2>&1
rc=$?; pack; echo "shim rc=$rc"; grep -E "^\[FAIL|Synthesis" $R/shim.txt
TORCH_SYMMMEM=NCCL LD_PRELOAD=$PWD/.carry/shim/libnccl.so.2 timeout 90 /opt/torch/.venv/bin/torchrun --nproc-per-node 4 bench/torch_symm_mem.py > $R/symm.txt 2>&1
rc=$?; pack; echo "symm rc=$rc: $(grep -c exact $R/symm.txt) exact lines"; grep -v exact $R/symm.txt | grep -i -E "wrong|error|differ" | head -4
LD_PRELOAD=$PWD/.carry/shim/libnccl.so.2 KILN_NCCL_PATH=$NCCL_LIB/libnccl.so.2 KILN_DEBUG=INFO timeout -k 10 150 \
  /opt/torch/.venv/bin/python -m torch.distributed.run --nproc-per-node 4 bench/torch_collectives.py \
  --sizes 512K,1M,2M,4M --dtypes float32,bfloat16,float16 --colls all_reduce --iters 10 --repeats 3 --label kiln > $R/torch4.txt 2>&1
rc=$?; pack; echo "torch4 rc=$rc: $(grep -c ' ok$' $R/torch4.txt) ok, $(grep -c FAIL $R/torch4.txt) FAIL"
G="--graph 10 --iters 10 --warmup 3 --factor 4"
timeout 90 $B/coll_bench --ranks 4 $G --min 16 --max 16M --csv $R/g4.csv > $R/g4.txt 2>&1
timeout 90 $B/coll_bench --ranks 4 $G --min 64K --max 16M --window --csv $R/w4.csv > $R/w4.txt 2>&1
pack
F="--graph 10 --iters 10 --warmup 3 --factor 2"
for i in 1 2; do
  CUDA_VISIBLE_DEVICES=0,1 timeout 60 $B/coll_bench --ranks 2 $F --min 2M --max 8M --csv $R/X2_$i.csv > $R/X2_$i.txt 2>&1
  CUDA_VISIBLE_DEVICES=0,1 KILN_SYM_LL128_MAX_BYTES=4M timeout 60 $B/coll_bench --ranks 2 $F --min 2M --max 8M --csv $R/Y2_$i.csv > $R/Y2_$i.txt 2>&1
  timeout 60 $B/coll_bench --ranks 4 $F --colls allreduce --min 256K --max 1M --csv $R/X4_$i.csv > $R/X4_$i.txt 2>&1
  KILN_SYM_LL2_128_BYTES=65536 timeout 60 $B/coll_bench --ranks 4 $F --colls allreduce --min 256K --max 1M --csv $R/Y4_$i.csv > $R/Y4_$i.txt 2>&1
  pack
done
ab X2 Y2
ab X4 Y4
echo "== graphs 4 GPUs"; rows $R/g4.csv
echo "== windows 4 GPUs"; rows $R/w4.csv
grep -h " e[1-9]" $R/*.txt | head -5
