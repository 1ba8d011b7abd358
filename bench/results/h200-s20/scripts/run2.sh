# s20 run 2: sym_lines_apart again on the old and the new library (run 1's copy of it called the
# first allgather before its buffers' pointers were set: an illegal address on both, no verdict),
# synthesized_plans_4gpus (cut off by run 1's limit); then the new library under PyTorch (drop-in suite, symmetric memory, torch all_reduce at the
# LL and LL128 sizes under torchrun) and graphs 16 B-16 MiB, A = the old library's coll_bench
# (bin/coll_bench_old, a0a9111), B = the new, twice alternating on 4 GPUs, once each on 2.
RUN=r2 . scripts/device-pre.sh
timeout 60 $B/test_gpu_runtime_old --verbose -j1 --filter 'gpu_runtime/@(sym_lines_apart)' > $R/old_stale.txt 2>&1
echo "old rc=$?"; grep -E "^\[FAIL|^\[PASS|Synthesis|Assertion|expected|rank" $R/old_stale.txt | head -12; pack
suite new_stale 60 'sym_lines_apart|plan_ll_stale_slots'
suite plans 60 'synthesized_plans_4gpus'
LD_LIBRARY_PATH="$NCCL_LIB:$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 90 .carry/shim/test_gpu_shim --jobs 1 --verbose > $R/shim.txt 2>&1
rc=$?; pack; echo "shim rc=$rc"; grep -E "^\[FAIL|Synthesis" $R/shim.txt
TORCH_SYMMMEM=NCCL LD_PRELOAD=$PWD/.carry/shim/libnccl.so.2 timeout 90 /opt/torch/.venv/bin/torchrun --nproc-per-node 4 bench/torch_symm_mem.py > $R/symm.txt 2>&1
rc=$?; pack; echo "symm rc=$rc: $(grep -c exact $R/symm.txt) exact lines"; grep -v exact $R/symm.txt | grep -i -E "wrong|error|differ" | head -4
LD_PRELOAD=$PWD/.carry/shim/libnccl.so.2 KILN_NCCL_PATH=$NCCL_LIB/libnccl.so.2 timeout -k 10 150 \
  /opt/torch/.venv/bin/python -m torch.distributed.run --nproc-per-node 4 bench/torch_collectives.py \
  --sizes 1K,64K,1M --dtypes float32,bfloat16,float16 --colls all_reduce,all_gather,reduce_scatter,all_to_all --iters 10 --repeats 3 --label kiln > $R/torch4.txt 2>&1
rc=$?; pack; echo "torch4 rc=$rc: $(grep -c ' ok$' $R/torch4.txt) ok, $(grep -c FAIL $R/torch4.txt) FAIL"
G="--graph 10 --iters 10 --warmup 3 --factor 4 --min 16 --max 16M"
for i in 1 2; do
  timeout 90 $B/coll_bench_old --ranks 4 $G --csv $R/A4_$i.csv > $R/A4_$i.txt 2>&1
  timeout 90 $B/coll_bench --ranks 4 $G --csv $R/B4_$i.csv > $R/B4_$i.txt 2>&1
  pack
done
CUDA_VISIBLE_DEVICES=0,1 timeout 60 $B/coll_bench_old --ranks 2 $G --csv $R/A2_1.csv > $R/A2_1.txt 2>&1
CUDA_VISIBLE_DEVICES=0,1 timeout 60 $B/coll_bench --ranks 2 $G --csv $R/B2_1.csv > $R/B2_1.txt 2>&1
pack
ab A4 B4
ab A2 B2
echo "== graphs 4 GPUs (B)"; rows $R/B4_2.csv
echo "== graphs 2 GPUs (B)"; rows $R/B2_1.csv
grep -h " e[1-9]" $R/*.txt | head -5
# The LL kernels' receive share (the kernel alone, sym_probe; variants8.py: sp_1 returns once a
# block's lines are out, sp_0 as committed), LL against LL128, 4 GPUs and 2 GPUs.
tar xf .carry/probes8.tar -C .carry
for n in 4 2; do
  for a in ar ar128 ag ag128; do
    for b in 1024 16384 65536; do
      for v in 0 1; do
        echo "sp_$v $a $b n$n $(timeout 20 .carry/p8/sp_$v $a $b $n 20 200 2>&1 | grep -o '[0-9.]* us per kernel')"
      done
    done
  done
done > $R/split.txt 2>&1
pack
awk '{ k = $4 " " $2 " " $3 " " $1; v[k] = v[k] " " $5 } END { for (k in v) print k ":" v[k] }' $R/split.txt | sort
