#!/bin/bash
# session 7, device call 9 (4 GPUs): sum and avg reductions of the sym kernels with the op fixed
# at compile time (no per-element choice). sym suites (every dtype and op); graphs: bfloat16 and
# float reducescatter / allreduce 1-256 MiB, before (run 8's coll_bench, .carry/coll_bench_old.xz)
# and after in the same call; in-place allreduce 16 MiB-1 GiB (final rule).
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
timeout 120 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_rounds|sym_kernels_2gpus|sym_kernels_4gpus|sym_graph_replays)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
xz -dc .carry/coll_bench_old.xz > .carry/bin/coll_bench_old && chmod +x .carry/bin/coll_bench_old
for dt in bfloat16 float; do
  for v in old new; do
    C=$B; [ $v = old ] && C=.carry/bin/coll_bench_old
    timeout 40 $C --ranks 4 --iters 5 --warmup 2 --graph 5 --dtype $dt --colls reducescatter,allreduce --min 1M --max 256M --factor 4 --csv $L/${dt}_${v}_n4.csv > $L/${dt}_${v}_n4.txt 2>&1
  done
done
timeout 40 $B --ranks 4 --iters 5 --warmup 2 --graph 3 --inplace --colls allreduce --min 16M --max 1G --factor 4 --csv $L/ip_n4.csv > $L/ip_n4.txt 2>&1
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
tar xzf logs.tgz -O logs/tests.txt | grep -E 'FAIL|rc |checked|Synthesis' | head -8
for x in bfloat16_old_n4 bfloat16_new_n4 float_old_n4 float_new_n4 ip_n4; do echo "== $x (coll MiB nccl sym speedup err)"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 {printf "%s %s %s %s %s e%s; ",substr($1,1,5),$7/1048576,$10,$22,$26,$25}'; echo; done
