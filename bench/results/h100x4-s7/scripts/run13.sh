#!/bin/bash
# session 7, device call 13 (4 GPUs): the flag-form body forced inline (for bfloat16 the compiler
# had made it a separate function: 384-byte stack frame against half's and float's inlined
# bodies). sym suites (every dtype and op against the CPU reference); run 10's binary
# (.carry/coll_bench_old.xz) and this one in the same call: bfloat16, half and float
# reducescatter / allreduce 512 KiB-64 MiB; float graphs 8 B-1 GiB on the new one.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
timeout 150 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_rounds|sym_kernels_2gpus|sym_kernels_4gpus|sym_graph_replays|sym_empty_blocks|sym_choice)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
xz -dc .carry/coll_bench_old.xz > .carry/bin/coll_bench_old && chmod +x .carry/bin/coll_bench_old
for dt in bfloat16 half float; do
  for v in old new; do
    C=$B; [ $v = old ] && C=.carry/bin/coll_bench_old
    timeout 40 $C --ranks 4 --iters 10 --warmup 3 --graph 10 --dtype $dt --colls reducescatter,allreduce --min 512K --max 64M --factor 2 --csv $L/${dt}_${v}_n4.csv > $L/${dt}_${v}_n4.txt 2>&1
  done
done
timeout 50 $B --ranks 4 --iters 10 --warmup 3 --graph 10 --min 8 --max 64M --factor 4 --csv $L/graph_n4.csv > $L/graph_n4.txt 2>&1
timeout 45 $B --ranks 4 --iters 5 --warmup 2 --graph 3 --min 128M --max 1G --factor 2 --csv $L/graphL_n4.csv > $L/graphL_n4.txt 2>&1
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
tar xzf logs.tgz -O logs/tests.txt | grep -E 'FAIL|Synthesis|rc |checked' | head -8
for x in graph_n4 graphL_n4; do echo "== $x (slower or errors: coll bytes nccl sym speedup err)"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 && ($26<1.0 || $17+$21+$25>0) {printf "%s %s %s %s %s e%s%s%s; ",substr($1,1,5),$7,$10,$22,$26,$17,$21,$25}'; echo; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 {n++; if($26>=1.0) k++} END {print k"/"n" rows >= 1.0x"}'; done
for dt in bfloat16 half float; do for v in old new; do x=${dt}_${v}_n4; echo "== $x (coll MiB nccl sym speedup err)"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 {printf "%s %s %s %s %s e%s; ",substr($1,1,5),$7/1048576,$10,$22,$26,$25}'; echo; done; done
