#!/bin/bash
# session 8, device call 2: the copy-engine form (direct allgather/alltoall from KILN_SYM_CE_BYTES
# as memcpys between two meeting kernels) and block-rotated direct copies. Suites, then graphs
# 1 MiB-1 GiB on buffers in symmetric windows: default, SM-direct only, SM-direct with 128 blocks,
# staged (KILN_SYM_DIRECT=0); plain buffers for reference.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
NG=$(nvidia-smi -L | wc -l)
timeout 200 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_direct|sym_rounds|sym_kernels_2gpus|sym_kernels_4gpus|sym_graph_replays|sym_empty_blocks|sym_choice)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 120 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
A="--iters 5 --warmup 2 --graph 5 --min 1M --max 1G --factor 4"
for n in 2 4; do
  [ $NG -ge $n ] || continue
  timeout 60 $B --ranks $n $A --window --csv $L/win_n$n.csv > $L/win_n$n.txt 2>&1
  KILN_SYM_CE_BYTES=999999999999 timeout 60 $B --ranks $n $A --window --csv $L/winsm_n$n.csv > $L/winsm_n$n.txt 2>&1
  KILN_SYM_CE_BYTES=999999999999 KILN_SYM_BLOCKS=128 timeout 60 $B --ranks $n $A --window --colls allgather,alltoall --csv $L/winsm128_n$n.csv > $L/winsm128_n$n.txt 2>&1
  KILN_SYM_DIRECT=0 timeout 60 $B --ranks $n $A --window --csv $L/winstaged_n$n.csv > $L/winstaged_n$n.txt 2>&1
  timeout 60 $B --ranks $n $A --csv $L/plain_n$n.csv > $L/plain_n$n.txt 2>&1
  S="--iters 5 --warmup 2 --graph 10 --min 8 --max 512K --factor 4 --window"
  timeout 60 $B --ranks $n $S --csv $L/small_n$n.csv > $L/small_n$n.txt 2>&1
  KILN_SYM_BLOCK_BYTES=2048 timeout 60 $B --ranks $n $S --min 16K --csv $L/small2k_n$n.csv > $L/small2k_n$n.txt 2>&1
  KILN_SYM_BLOCK_BYTES=1024 timeout 60 $B --ranks $n $S --min 16K --csv $L/small1k_n$n.csv > $L/small1k_n$n.txt 2>&1
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
tar xzf logs.tgz -O logs/tests.txt | grep -E 'FAIL|rc |checked' | head -12
tar xzf logs.tgz -O logs/shim.txt | grep -E 'FAIL|rc |Synthesis' | head -6
for f in win_n2 winsm_n2 winsm128_n2 winstaged_n2 plain_n2 small_n2 small2k_n2 small1k_n2 win_n4 winsm_n4 winstaged_n4 plain_n4 small_n4; do
  tar xzf logs.tgz -O logs/$f.csv 2>/dev/null | awk -F, -v f=$f 'NR>1 {n++; if($26>=1.0) k++; e+=$17+$21+$25} END {if(n) print f": "k"/"n" rows >= 1.0x, errors "e}'
done
