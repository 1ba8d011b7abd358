#!/bin/bash
# session 8, device call 5: after the review: windows agreed on by every rank in the drop-in, peer
# addresses read into a scratch buffer, and the sym kernel's prologue without a barrier (every
# thread reads the sequence slot itself, so an LL call's first loads go out with it). Suites on
# this build; run 4's binary (old/) against this one in the same call: graphs 8 B-512 KiB, windows
# and plain, 2 GPUs; windows 16 MiB-1 GiB on this build.
L=$OUT/logs; mkdir -p $L .carry/old
tar xJf .carry/pack.tar.xz -C .carry
tar xJf .carry/old.tar.xz -C .carry/old bin/coll_bench
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
nvidia-smi -L > $L/gpus.txt
timeout 300 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_direct|sym_rounds|sym_kernels_2gpus|sym_kernels_4gpus|sym_graph_replays|sym_empty_blocks|sym_choice|groups|several_streams|two_communicators|graph_replays|one_process_per_gpu|missing_peer_times_out|supports_and_load_errors)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 120 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
G="--ranks 2 --iters 10 --warmup 3 --graph 20 --min 8 --max 512K --factor 4"
for k in 1 2; do
  for v in new old; do
    B=.carry/bin/coll_bench; [ $v = old ] && B=.carry/old/bin/coll_bench
    timeout 60 $B $G --window --csv $L/gwin${k}_$v.csv > $L/gwin${k}_$v.txt 2>&1
    timeout 60 $B $G --csv $L/gplain${k}_$v.csv > $L/gplain${k}_$v.txt 2>&1
  done
done
timeout 60 .carry/bin/coll_bench --ranks 2 --iters 5 --warmup 2 --graph 5 --min 16M --max 1G --factor 4 --window --csv $L/win_big.csv > $L/win_big.txt 2>&1
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
tar xzf logs.tgz -O logs/tests.txt | grep -E 'FAIL|rc |checked|Synthesis' | head -16
tar xzf logs.tgz -O logs/shim.txt | grep -E 'FAIL|rc |Synthesis' | head -6
for f in gwin1 gplain1 gwin2 gplain2; do
  paste -d, <(tar xzf logs.tgz -O logs/${f}_new.csv) <(tar xzf logs.tgz -O logs/${f}_old.csv) | awk -F, -v f=$f 'NR>1 && $22>0 {n++; s+=$49/$22; if ($22<$49) k++} END {if(n) printf "%s: new faster in %d/%d rows, mean old/new %.3f\n", f, k, n, s/n}'
done
tar xzf logs.tgz -O logs/win_big.csv | awk -F, 'NR>1 {n++; if($26>=1.0) k++; e+=$25} END {print "win_big: "k"/"n" rows >= 1.0x, errors "e}'
