#!/bin/bash
# session 9, device call 1: (a) LL forms load the own operand before waiting for the peers'
# lines (new build vs session 8's binary, same call, 8 B-512 KiB graphs, plain and windows);
# (b) copy engines vs SM stores over NVLink, both GPUs sending (scripts/ceprobe.cu, built with nvcc -O3 -arch=sm_90 into .carry/probe);
# (c) knob sweeps: direct blocks (windows, 256 MiB / 1 GiB), copy blocks and round bytes (plain).
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
mkdir -p .carry/old && tar xJf .carry/old.tar.xz -C .carry/old
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench; O=.carry/old/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
timeout 120 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_kernels_2gpus|sym_rounds|sym_graph_replays|sym_empty_blocks|sym_direct)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
timeout 60 .carry/probe/ceprobe 512 > $L/ceprobe512.txt 2>&1
timeout 30 .carry/probe/ceprobe 128 > $L/ceprobe128.txt 2>&1
S="--ranks 2 --iters 10 --warmup 3 --graph 20 --min 8 --max 512K --factor 4 --colls allreduce,reducescatter,allgather"
for k in 1 2; do
  timeout 40 $B $S --window --csv $L/small_win_new$k.csv > /dev/null 2>&1
  timeout 40 $O $S --window --csv $L/small_win_old$k.csv > /dev/null 2>&1
  timeout 40 $B $S --csv $L/small_plain_new$k.csv > /dev/null 2>&1
  timeout 40 $O $S --csv $L/small_plain_old$k.csv > /dev/null 2>&1
done
E="--ranks 2 --iters 50 --warmup 10 --batch --min 8 --max 32K --factor 8 --colls allreduce,reducescatter,allgather"
for k in 1 2; do
  timeout 40 $B $E --csv $L/eager_new$k.csv > /dev/null 2>&1
  timeout 40 $O $E --csv $L/eager_old$k.csv > /dev/null 2>&1
done
Bg="--ranks 2 --iters 5 --warmup 2 --graph 5 --min 256M --max 1G --factor 4"
for b in 96 128 132 192 256; do
  KILN_SYM_DIRECT_BLOCKS=$b timeout 60 $B $Bg --window --colls allgather,alltoall --csv $L/dblk$b.csv > /dev/null 2>&1
done
for b in 64 128; do for r in 16M 32M 64M; do
  rb=$(numfmt --from=iec $r)
  KILN_SYM_BLOCKS=$b KILN_SYM_COPY_ROUND_BYTES=$rb timeout 60 $B $Bg --colls allgather,alltoall --csv $L/plain_b${b}_r$r.csv > /dev/null 2>&1
done; done
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt; grep -E 'FAIL|rc |Synthesis' logs/tests.txt | head; cat logs/ceprobe512.txt logs/ceprobe128.txt
echo "== small: size coll new old nccl(new run)"
for v in win plain eager; do for k in 1 2; do f=logs/small_${v}; [ $v = eager ] && f=logs/eager; paste -d, ${f}_new$k.csv ${f}_old$k.csv | awk -F, -v v=$v$k 'NR>1 {printf "%s %s %s new %.2f old %.2f nccl %.2f/%.2f err %s%s\n", v, $1, $7, $22, $49, $10, $37, $25, $52}'; done; done
echo "== big: sym_us nccl_us"
for f in logs/dblk*.csv logs/plain_b*.csv; do awk -F, -v f=$(basename $f .csv) 'NR>1 {printf "%s %s %s sym %.1f nccl %.1f busbw %.1f err %s\n", f, $1, $7, $22, $10, $24, $25}' $f; done
rm -rf logs
