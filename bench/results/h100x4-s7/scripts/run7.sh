#!/bin/bash
# session 7, device call 7 (4 GPUs): the final build eager: batched as nccl-tests 8 B-16 MiB on 4
# and 2 GPUs, 64 MiB-1 GiB on 4 GPUs (busbw), one process per GPU 32 KiB-1 GiB; then the drop-in
# under torchrun (4 processes, float32 and bfloat16, 1 KiB-64 MiB: the sizes now on the sym kernels).
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
for n in 4 2; do
  timeout 45 $B --ranks $n --iters 50 --warmup 10 --batch --host-time --min 8 --max 16M --factor 2 --csv $L/batch_n$n.csv > $L/batch_n$n.txt 2>&1
done
timeout 60 $B --ranks 4 --iters 10 --warmup 3 --batch --min 64M --max 1G --factor 4 --csv $L/batchL_n4.csv > $L/batchL_n4.txt 2>&1
timeout 60 $B --ranks 4 --mp --iters 20 --warmup 5 --min 32K --max 1G --factor 8 --csv $L/mp_n4.csv > $L/mp_n4.txt 2>&1
mkdir -p .carry/shim/cudart && cp -L .carry/lib/libcudart.so* .carry/shim/cudart/
GPUS=4 SIZES=1K,1M,16M,64M DTYPES=float32,bfloat16 COLLS=all_reduce,all_gather,reduce_scatter,all_to_all ITERS=5 \
  timeout 200 scripts/device-shim.sh > $L/torchrun.txt 2>&1; echo "rc $?" >> $L/torchrun.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
tar xzf logs.tgz -O logs/torchrun.txt | tail -12
for x in batch_n4 batch_n2 batchL_n4 mp_n4; do echo "== $x (coll bytes nccl sym speedup busbw-nccl busbw-sym)"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 {printf "%s %s %s %s %s %s %s; ",substr($1,1,5),$7,$10,$22,$26,$12,$24}'; echo; done
