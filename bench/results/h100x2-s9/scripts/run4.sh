#!/bin/bash
# session 9, device call 4: the copy-engine form's local-copy kernel loaded at communicator
# creation (run 3's binary, .carry/prev, timed out at its first launch: checked here with
# CUDA_MODULE_LOADING=EAGER against the default lazy loading); suites with pieces of whole packs;
# CE vs SM direct on windows, graphs and eager; windows 8 B-1 GiB new vs session 8; plain
# alltoall/reducescatter 256 MiB-1 GiB new vs old twice (run 3 saw +-2% there).
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
mkdir -p .carry/old .carry/prev && tar xJf .carry/old.tar.xz -C .carry/old && tar xJf .carry/prev.tar.xz -C .carry/prev
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench; O=.carry/old/bin/coll_bench; P=.carry/prev/bin/coll_bench; T=.carry/bin/test_gpu_runtime
nvidia-smi -L > $L/gpus.txt
Q="--ranks 2 --iters 2 --warmup 1 --min 16M --max 16M --colls allgather --window --timeout-ms 2000"
KILN_SYM_CE_BYTES=0 timeout 60 $P $Q > $L/prev_lazy.txt 2>&1
CUDA_MODULE_LOADING=EAGER KILN_SYM_CE_BYTES=0 timeout 60 $P $Q > $L/prev_eager.txt 2>&1
KILN_SYM_CE_BYTES=0 timeout 60 $B $Q > $L/new_lazy.txt 2>&1
timeout 300 $T --verbose -j1 --filter 'gpu_runtime/@(sym_direct|sym_direct_copy_engine|sym_direct_choice|sym_choice|sym_kernels_2gpus|sym_graph_replays|groups|several_streams|two_communicators|graph_replays|missing_peer_times_out|large_buffers)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 120 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
W="--ranks 2 --iters 5 --warmup 2 --min 8M --max 1G --factor 2 --colls allgather,alltoall --window"
for g in "--graph 5" ""; do
  t=$([ -n "$g" ] && echo graph || echo eager)
  timeout 60 $B $W $g --csv $L/ce_def_$t.csv > $L/ce_def_$t.txt 2>&1
  KILN_SYM_CE_BYTES=0 timeout 60 $B $W $g --csv $L/ce_all_$t.csv > $L/ce_all_$t.txt 2>&1
  KILN_SYM_CE=0 timeout 60 $B $W $g --csv $L/ce_off_$t.csv > $L/ce_off_$t.txt 2>&1
done
F="--ranks 2 --iters 10 --warmup 3 --graph 10 --min 8 --max 1G --factor 4"
timeout 120 $B $F --window --csv $L/full_win_new.csv > /dev/null 2>&1
timeout 120 $O $F --window --csv $L/full_win_old.csv > /dev/null 2>&1
G="--ranks 2 --iters 5 --warmup 2 --graph 5 --min 256M --max 1G --factor 2 --colls alltoall,reducescatter"
for k in 1 2; do
  timeout 60 $B $G --csv $L/big_new$k.csv > /dev/null 2>&1
  timeout 60 $O $G --csv $L/big_old$k.csv > /dev/null 2>&1
done
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
for f in prev_lazy prev_eager new_lazy; do echo "$f: $(grep -c TIMEOUT logs/$f.txt) timeouts; $(grep -E '^ +16777216' logs/$f.txt | awk '{print "sym", $(NF-4)}')"; done
grep -E 'FAIL|rc |Synthesis|checked' logs/tests.txt | head -20; grep -E 'FAIL|rc |Synthesis' logs/shim.txt | head
echo "== CE: coll size def all off (sym us) nccl"
for t in graph eager; do paste -d, logs/ce_def_$t.csv logs/ce_all_$t.csv logs/ce_off_$t.csv | awk -F, -v t=$t 'NR>1 {printf "%s %s %s def %.1f ce %.1f sm %.1f nccl %.1f err %s%s%s\n", t, $1, $7, $22, $49, $76, $10, $25, $52, $79}'; done
echo "== full: coll size new old nccl speedup(new)"
paste -d, logs/full_win_new.csv logs/full_win_old.csv | awk -F, 'NR>1 {printf "win %s %s new %.2f old %.2f nccl %.2f x%.2f err %s%s\n", $1, $7, $22, $49, $10, $26, $25, $52}'
for k in 1 2; do paste -d, logs/big_new$k.csv logs/big_old$k.csv | awk -F, -v k=$k 'NR>1 {printf "big%s %s %s new %.1f old %.1f nccl %.1f err %s%s\n", k, $1, $7, $22, $49, $10, $25, $52}'; done
rm -rf logs
