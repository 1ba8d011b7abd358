# s19 run 4: the drop-in under torchrun (one process per GPU, 4 and 2 GPUs) at the sizes that now
# go as LL128 lines (256 KiB-2 MiB), every result checked exactly (bench/torch_collectives.py).
RUN=r4 . scripts/device-pre.sh
PY=/opt/torch/.venv/bin/python
for n in 4 2; do
  dev=0,1,2,3; [ $n = 2 ] && dev=0,1
  CUDA_VISIBLE_DEVICES=$dev LD_LIBRARY_PATH="$NCCL_LIB:$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" \
    LD_PRELOAD=$PWD/.carry/shim/libnccl.so.2 KILN_NCCL_PATH=$NCCL_LIB/libnccl.so.2 KILN_DEBUG=INFO \
    timeout -k 10 150 $PY -m torch.distributed.run --nproc-per-node $n bench/torch_collectives.py \
    --sizes 256K,512K,1M,2M --dtypes float32,bfloat16,float16 --iters 10 --repeats 3 --label kiln > $R/torch$n.txt 2>&1
  echo "torchrun $n: rc=$?"
  pack
done
for n in 4 2; do echo "== $n"; grep -c -i "fail" $R/torch$n.txt; grep -E "^ *(all|reduce|broad)" $R/torch$n.txt | head -40; done
grep -h "^kiln:" $R/torch*.txt | sed 's/ pid [0-9]*:/:/' | sort | uniq -c | sort -rn | head -12
