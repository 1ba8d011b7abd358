#!/bin/bash
# session 8, device call 6: the final build (run 4's kernels, run 5's host side: windows agreed
# on by every rank in the drop-in, review fixes). GPU suites; graphs 8 B-1 GiB on plain buffers
# and on windows; eager batched 8 B-64 KiB; 2 GPUs.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
timeout 300 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_direct|sym_rounds|sym_kernels_2gpus|sym_kernels_4gpus|sym_graph_replays|sym_empty_blocks|sym_choice|groups|several_streams|two_communicators|graph_replays|one_process_per_gpu|missing_peer_times_out|supports_and_load_errors)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 120 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
timeout 90 $B --ranks 2 --iters 10 --warmup 3 --graph 10 --min 8 --max 1G --factor 4 --csv $L/graph_plain.csv > $L/graph_plain.txt 2>&1
timeout 90 $B --ranks 2 --iters 10 --warmup 3 --graph 10 --min 8 --max 1G --factor 4 --window --csv $L/graph_win.csv > $L/graph_win.txt 2>&1
timeout 60 $B --ranks 2 --iters 50 --warmup 10 --batch --min 8 --max 64K --factor 8 --csv $L/eager.csv > $L/eager.txt 2>&1
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
tar xzf logs.tgz -O logs/tests.txt | grep -E 'FAIL|rc |checked|Synthesis' | head -16
tar xzf logs.tgz -O logs/shim.txt | grep -E 'FAIL|rc |Synthesis' | head -6
for f in graph_plain graph_win eager; do
  tar xzf logs.tgz -O logs/$f.csv | awk -F, -v f=$f 'NR>1 {n++; if($26>=1.0) k++; e+=$17+$21+$25} END {print f": "k"/"n" rows >= 1.0x, errors "e}'
done
