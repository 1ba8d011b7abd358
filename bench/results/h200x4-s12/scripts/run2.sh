#!/bin/bash
# session 12, device call 2: the symmetric kernels launched with programmatic stream serialization
# (KILN_SYM_PDL, on by default) against without (KILN_SYM_PDL=0), same call: GPU suites with it;
# graphs 16 B-1 GiB on 4 GPUs plain, 16 B-64 KiB on windows and on 2 GPUs; eager batched on 4 and
# 2 GPUs. nvl_bench: a reducescatter of engine pushes into the peers' scratch + local reductions
# (rspush), 256 MiB and 64 MiB pieces.
. bench/results/h200x4-s12/scripts/pre.sh
T='sym_group_peers|sym_direct|sym_direct_copy_engine|sym_kernels_4gpus|sym_rounds|sym_graph_replays|groups|several_streams|two_communicators|graph_replays|one_process_per_gpu'
timeout 150 .carry/bin/test_gpu_runtime --verbose -j1 --filter "gpu_runtime/@($T)" > $L/tests4.txt 2>&1; echo "rc $?" >> $L/tests4.txt
CUDA_VISIBLE_DEVICES=0,1 timeout 60 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_group_peers|sym_direct_copy_engine|sym_kernels_2gpus)' > $L/tests2.txt 2>&1; echo "rc $?" >> $L/tests2.txt
G="--iters 20 --warmup 5 --graph 10 --factor 4"
for pdl in 1 0; do
  KILN_SYM_PDL=$pdl timeout 45 $B --ranks 4 $G --min 16 --max 1G --csv $L/g4_p$pdl.csv > $L/g4_p$pdl.txt 2>&1
  KILN_SYM_PDL=$pdl timeout 20 $B --ranks 4 $G --min 16 --max 64K --window --csv $L/w4_p$pdl.csv > $L/w4_p$pdl.txt 2>&1
  KILN_SYM_PDL=$pdl timeout 20 $B --ranks 2 $G --min 16 --max 64K --csv $L/g2_p$pdl.csv > $L/g2_p$pdl.txt 2>&1
  KILN_SYM_PDL=$pdl timeout 30 $B --ranks 4 --iters 50 --warmup 10 --batch --min 8 --max 64K --factor 8 --csv $L/e4_p$pdl.csv > $L/e4_p$pdl.txt 2>&1
  KILN_SYM_PDL=$pdl timeout 30 $B --ranks 2 --iters 50 --warmup 10 --batch --min 8 --max 64K --factor 8 --csv $L/e2_p$pdl.csv > $L/e2_p$pdl.txt 2>&1
done
timeout 60 .carry/bin/nvl_bench --gpus 4 --iters 5 --only rspush > $L/rspush4.txt 2>&1; echo "rc $?" >> $L/rspush4.txt
timeout 30 .carry/bin/nvl_bench --gpus 4 --iters 5 --bytes 64M --only rspush > $L/rspush4_64.txt 2>&1; echo "rc $?" >> $L/rspush4_64.txt
timeout 30 .carry/bin/nvl_bench --gpus 2 --iters 5 --only rspush > $L/rspush2.txt 2>&1; echo "rc $?" >> $L/rspush2.txt
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
grep -E 'FAIL|rc |Synthesis|Assert' logs/tests4.txt logs/tests2.txt | head -30
behind logs/g4_p1.csv logs/w4_p1.csv logs/g2_p1.csv logs/e4_p1.csv logs/e2_p1.csv
cmp logs/g4_p0.csv logs/g4_p1.csv | awk '$2 <= 65536 || $2 >= 134217728 || NR==1 || /errors/'
cmp logs/w4_p0.csv logs/w4_p1.csv
cmp logs/g2_p0.csv logs/g2_p1.csv
cmp logs/e4_p0.csv logs/e4_p1.csv
cmp logs/e2_p0.csv logs/e2_p1.csv
cat logs/rspush4.txt logs/rspush4_64.txt logs/rspush2.txt
rm -rf logs
