#!/bin/bash
# session 7, device call 11 (4 GPUs): bfloat16 reductions at 512 KiB-16 MiB lose to NCCL (run 10:
# reducescatter 1 MiB 0.84x) where float wins: data per block (4, 2, 1 KiB) for bfloat16 and float,
# same call.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
for dt in bfloat16 float; do
  for bb in 4096 2048 1024; do
    KILN_SYM_BLOCK_BYTES=$bb timeout 25 $B --ranks 4 --iters 10 --warmup 3 --graph 10 --no-check --dtype $dt --colls reducescatter,allreduce --min 512K --max 16M --factor 2 --csv $L/${dt}_bb${bb}.csv > $L/${dt}_bb${bb}.txt 2>&1
  done
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
for dt in bfloat16 float; do for bb in 4096 2048 1024; do x=${dt}_bb$bb; echo "== $x (coll MiB nccl sym speedup)"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 {printf "%s %s %s %s %s; ",substr($1,1,5),$7/1048576,$10,$22,$26}'; echo; done; done
