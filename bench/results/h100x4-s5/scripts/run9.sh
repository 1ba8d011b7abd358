#!/bin/bash
# session 5, device call 9 (4 GPUs, build of run 8): eager, one process driving the GPUs, timed as
# nccl-tests does (--batch), 50 calls per batch, 4 and 2 GPUs, 8 B-4 MiB x2, out of place and
# allreduce in place - the table of the closing note (run 8's machine was noisy).
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
for n in 4 2; do
  timeout 60 $B --ranks $n --iters 50 --warmup 10 --batch --min 8 --max 4M --factor 2 --csv $L/batch_n$n.csv > $L/batch_n$n.txt 2>&1
  timeout 30 $B --ranks $n --iters 50 --warmup 10 --batch --inplace --colls allreduce --min 8 --max 4M --factor 2 --csv $L/batch_ip_n$n.csv > $L/batch_ip_n$n.txt 2>&1
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
for x in batch_n4 batch_ip_n4 batch_n2 batch_ip_n2; do echo "== $x"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 {printf "%s %s n%s k%.2f x%s e%s%s; ",substr($1,1,5),$7,$10,$10/$22,$22,$17,$21}'; echo; done
