#!/bin/bash
# session 7, device call 12 (2 GPUs: no 4-GPU kind was lent any more): 16-bit float sums a pack at a time (Sum16: each pair to float, added,
# rounded once; one choice of op per pack). sym suites (every dtype and op against the CPU
# reference); bfloat16 and half reducescatter / allreduce 512 KiB-64 MiB, run 10's build
# (.carry/coll_bench_old.xz) and this one in the same call; float graphs 8 B-64 MiB as a check.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
timeout 120 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_rounds|sym_kernels_2gpus|sym_graph_replays|sym_empty_blocks|sym_choice|graph_replays|one_process_per_gpu)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
xz -dc .carry/coll_bench_old.xz > .carry/bin/coll_bench_old && chmod +x .carry/bin/coll_bench_old
timeout 50 $B --ranks 2 --iters 10 --warmup 3 --graph 10 --min 8 --max 64M --factor 4 --csv $L/graph_n2.csv > $L/graph_n2.txt 2>&1
for dt in bfloat16 half; do
  for v in old new; do
    C=$B; [ $v = old ] && C=.carry/bin/coll_bench_old
    timeout 40 $C --ranks 2 --iters 10 --warmup 3 --graph 10 --dtype $dt --colls reducescatter,allreduce --min 512K --max 64M --factor 2 --csv $L/${dt}_${v}_n2.csv > $L/${dt}_${v}_n2.txt 2>&1
  done
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
for f in tests; do tar xzf logs.tgz -O logs/$f.txt | grep -E 'FAIL|Synthesis|rc |checked' | head -8; done
for x in graph_n2 bfloat16_new_n2 half_new_n2; do echo "== $x (slower or errors: coll bytes nccl sym speedup err)"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 && ($26<1.0 || $17+$21+$25>0) {printf "%s %s %s %s %s e%s%s%s; ",substr($1,1,5),$7,$10,$22,$26,$17,$21,$25}'; echo; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 {n++; if($26>=1.0) k++} END {print k"/"n" rows >= 1.0x"}'; done
for x in bfloat16_old_n2 bfloat16_new_n2 half_old_n2 half_new_n2; do echo "== $x (coll MiB nccl sym speedup)"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 {printf "%s %s %s %s %s; ",substr($1,1,5),$7/1048576,$10,$22,$26}'; echo; done
