#!/bin/bash
# session 9, device call 3: the copy-engine form with DeviceToDevice copies (run 2: every CE call
# timed out under groups with cudaMemcpyDefault); the suite's new grouped calls against the old
# copy kind (KILN_DEBUG_CE_DEFAULT, a temporary switch of this build) to see that they catch it;
# CE vs SM direct on windows; copy rounds growing to 32 MiB only for copies of 8+ rounds.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
mkdir -p .carry/old && tar xJf .carry/old.tar.xz -C .carry/old
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench; O=.carry/old/bin/coll_bench; T=.carry/bin/test_gpu_runtime
nvidia-smi -L > $L/gpus.txt
KILN_DEBUG_CE_DEFAULT=1 timeout 100 $T --verbose -j1 --filter 'gpu_runtime/sym_direct_copy_engine' > $L/tests_ce_default.txt 2>&1; echo "rc $?" >> $L/tests_ce_default.txt
timeout 300 $T --verbose -j1 --filter 'gpu_runtime/@(sym_direct|sym_direct_copy_engine|sym_direct_choice|sym_choice|sym_kernels_2gpus|sym_rounds|sym_graph_replays|groups|several_streams|graph_replays)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 120 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
W="--ranks 2 --iters 5 --warmup 2 --min 16M --max 1G --factor 2 --colls allgather,alltoall --window"
for g in "--graph 5" ""; do
  t=$([ -n "$g" ] && echo graph || echo eager)
  timeout 60 $B $W $g --csv $L/ce_def_$t.csv > $L/ce_def_$t.txt 2>&1
  KILN_SYM_CE_BYTES=0 timeout 60 $B $W $g --csv $L/ce_all_$t.csv > $L/ce_all_$t.txt 2>&1
  KILN_SYM_CE=0 timeout 60 $B $W $g --csv $L/ce_off_$t.csv > $L/ce_off_$t.txt 2>&1
done
F="--ranks 2 --iters 10 --warmup 3 --graph 10 --min 1M --max 1G --factor 2"
timeout 120 $B $F --csv $L/full_plain_new.csv > /dev/null 2>&1
timeout 120 $O $F --csv $L/full_plain_old.csv > /dev/null 2>&1
F="--ranks 2 --iters 10 --warmup 3 --graph 10 --min 8 --max 1G --factor 4"
timeout 120 $B $F --window --csv $L/full_win_new.csv > /dev/null 2>&1
timeout 120 $O $F --window --csv $L/full_win_old.csv > /dev/null 2>&1
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt; grep -E 'FAIL|rc |Synthesis|checked|TIMEOUT|timed out' logs/tests_ce_default.txt | head -5
grep -E 'FAIL|rc |Synthesis|checked' logs/tests.txt | head -20; grep -E 'FAIL|rc |Synthesis' logs/shim.txt | head
echo "== CE: coll size def all off (sym us) nccl"
for t in graph eager; do paste -d, logs/ce_def_$t.csv logs/ce_all_$t.csv logs/ce_off_$t.csv | awk -F, -v t=$t 'NR>1 {printf "%s %s %s def %.1f ce %.1f sm %.1f nccl %.1f err %s%s%s\n", t, $1, $7, $22, $49, $76, $10, $25, $52, $79}'; done
echo "== full: coll size new old nccl speedup(new)"
for v in plain win; do paste -d, logs/full_${v}_new.csv logs/full_${v}_old.csv | awk -F, -v v=$v 'NR>1 {printf "%s %s %s new %.2f old %.2f nccl %.2f x%.2f err %s%s\n", v, $1, $7, $22, $49, $10, $26, $25, $52}'; done
rm -rf logs
