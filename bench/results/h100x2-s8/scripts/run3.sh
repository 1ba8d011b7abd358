#!/bin/bash
# session 8, device call 3: the final zero-copy design: direct allgather/alltoall (128 blocks,
# block-rotated peers) and two-shot allreduce storing its reduced shares into the peers' outputs
# (reducescatter staged), from 16 MiB. GPU suites (sym, runtime regressions, drop-in), graphs on
# 2 GPUs 1 MiB-1 GiB on windows (default; staged KILN_SYM_DIRECT=0), direct from 64 KiB, plain buffers.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
NG=$(nvidia-smi -L | wc -l)
timeout 300 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_direct|sym_rounds|sym_kernels_2gpus|sym_kernels_4gpus|sym_graph_replays|sym_empty_blocks|sym_choice|groups|several_streams|two_communicators|graph_replays|one_process_per_gpu|missing_peer_times_out|supports_and_load_errors)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 120 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
A="--iters 5 --warmup 2 --graph 5 --min 1M --max 1G --factor 4"
for n in 2 4; do
  [ $NG -ge $n ] || continue
  timeout 60 $B --ranks $n $A --window --csv $L/win_n$n.csv > $L/win_n$n.txt 2>&1
  KILN_SYM_DIRECT=0 timeout 60 $B --ranks $n $A --window --csv $L/winstaged_n$n.csv > $L/winstaged_n$n.txt 2>&1
  KILN_SYM_DIRECT_BYTES=0 timeout 60 $B --ranks $n --iters 5 --warmup 2 --graph 10 --min 64K --max 16M --factor 2 --window --csv $L/win0_n$n.csv > $L/win0_n$n.txt 2>&1
  timeout 60 $B --ranks $n $A --csv $L/plain_n$n.csv > $L/plain_n$n.txt 2>&1
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
tar xzf logs.tgz -O logs/tests.txt | grep -E 'FAIL|rc |checked|Synthesis' | head -16
tar xzf logs.tgz -O logs/shim.txt | grep -E 'FAIL|rc |Synthesis' | head -6
for f in win_n2 winstaged_n2 win0_n2 plain_n2 win_n4 winstaged_n4 win0_n4 plain_n4; do
  tar xzf logs.tgz -O logs/$f.csv 2>/dev/null | awk -F, -v f=$f 'NR>1 {n++; if($26>=1.0) k++; e+=$17+$21+$25} END {if(n) print f": "k"/"n" rows >= 1.0x, errors "e}'
done
