#!/bin/bash
# session 9, device call 9: reducescatter in rounds of at most 8 MiB on 2 GPUs (the default now):
# suites covering rounds, reducescatter 1 MiB-1 GiB plain and windows, graphs.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
timeout 200 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_rounds|sym_kernels_2gpus|sym_direct|large_buffers)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
G="--ranks 2 --iters 5 --warmup 2 --graph 5 --min 1M --max 1G --factor 4 --colls reducescatter"
timeout 60 $B $G --csv $L/rs_plain.csv > /dev/null 2>&1
timeout 60 $B $G --window --csv $L/rs_win.csv > /dev/null 2>&1
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt; grep -E 'FAIL|rc |checked|Synthesis' logs/tests.txt | head
for f in rs_plain rs_win; do awk -F, -v f=$f 'NR>1 {printf "%s %s sym %.1f nccl %.1f x%.2f busbw %.1f err %s\n", f, $7, $22, $10, $26, $24, $25}' logs/$f.csv; done
rm -rf logs
