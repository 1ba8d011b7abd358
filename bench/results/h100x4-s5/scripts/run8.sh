#!/bin/bash
# session 5, device call 8 (4 GPUs, final build + coll_bench --batch): eager, one process driving
# the GPUs, timed both ways in one call: per call (default: every call between its own events)
# and nccl-tests' way (--batch: `iters` back-to-back calls between one event pair per rank);
# 4 and 2 GPUs, 8 B-4 MiB, then 4 GPUs to 1 GiB with --batch.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
for n in 4 2; do
  timeout 40 $B --ranks $n --iters 20 --warmup 5 --min 8 --max 4M --factor 4 --csv $L/eager_n$n.csv > $L/eager_n$n.txt 2>&1
  timeout 40 $B --ranks $n --iters 20 --warmup 5 --batch --min 8 --max 4M --factor 4 --csv $L/batch_n$n.csv > $L/batch_n$n.txt 2>&1
done
timeout 90 $B --ranks 4 --iters 20 --warmup 5 --batch --min 16M --max 1G --factor 4 --csv $L/batch_large_n4.csv > $L/batch_large_n4.txt 2>&1
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
for x in eager_n4 batch_n4 eager_n2 batch_n2 batch_large_n4; do echo "== $x"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 {printf "%s %s n%s k%.2f x%s e%s%s; ",substr($1,1,5),$7,$10,$10/$22,$22,$17,$21}'; echo; done
