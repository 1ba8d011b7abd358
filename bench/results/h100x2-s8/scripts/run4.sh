#!/bin/bash
# session 8, device call 4: one sequence-number slot per block (no atomic, no barrier at a sym
# kernel's end) and the direct form needing only the output in a window. GPU suites on this build;
# then the run-3 binary (old/) against this one in the same call: graphs 8 B-512 KiB on windows and
# on plain buffers, eager batched 8 B-64 KiB, 2 GPUs.
L=$OUT/logs; mkdir -p $L .carry/old
tar xJf .carry/pack.tar.xz -C .carry
tar xJf .carry/old.tar.xz -C .carry/old bin/coll_bench
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
nvidia-smi -L > $L/gpus.txt
timeout 300 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_direct|sym_rounds|sym_kernels_2gpus|sym_kernels_4gpus|sym_graph_replays|sym_empty_blocks|sym_choice|groups|several_streams|two_communicators|graph_replays|one_process_per_gpu|missing_peer_times_out|large_buffers)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 120 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
G="--ranks 2 --iters 10 --warmup 3 --graph 20 --min 8 --max 512K --factor 4"
E="--ranks 2 --iters 50 --warmup 10 --batch --min 8 --max 64K --factor 8"
for v in new old; do
  B=.carry/bin/coll_bench; [ $v = old ] && B=.carry/old/bin/coll_bench
  timeout 60 $B $G --window --csv $L/gwin_$v.csv > $L/gwin_$v.txt 2>&1
  timeout 60 $B $G --csv $L/gplain_$v.csv > $L/gplain_$v.txt 2>&1
  timeout 60 $B $E --csv $L/eager_$v.csv > $L/eager_$v.txt 2>&1
done
for v in new old; do
  B=.carry/bin/coll_bench; [ $v = old ] && B=.carry/old/bin/coll_bench
  timeout 60 $B $G --window --csv $L/gwin2_$v.csv > $L/gwin2_$v.txt 2>&1
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
tar xzf logs.tgz -O logs/tests.txt | grep -E 'FAIL|rc |checked|Synthesis' | head -16
tar xzf logs.tgz -O logs/shim.txt | grep -E 'FAIL|rc |Synthesis' | head -6
for f in gwin gplain eager gwin2; do
  paste -d, <(tar xzf logs.tgz -O logs/${f}_new.csv) <(tar xzf logs.tgz -O logs/${f}_old.csv) | awk -F, -v f=$f 'NR>1 && $22>0 {n++; s+=$49/$22; if ($22<$49) k++} END {if(n) printf "%s: new faster in %d/%d rows, mean old/new %.3f\n", f, k, n, s/n}'
done
