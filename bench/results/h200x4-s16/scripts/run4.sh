# s16 run 4: the library as committed (a kernel per form; reducescatter's and two-shot LL's sends load
# every peer's part first): the GPU suites (4 and 2 GPUs, the plans' classic suite left out for time),
# the drop-in suite, PyTorch's symmetric memory under torchrun, then the tables: graphs 4 GPUs plain 16 B-1 GiB,
# windows 16 B-16 MiB, 2 GPUs 16 B-64 KiB; eager 4 and 2 GPUs 8 B-32 KiB.
RUN=${RUN_NAME:-r4} . scripts/device-pre.sh  # run5.sh: RUN_NAME=r5
cat $OUT/gpus.txt
T="$B/test_gpu_runtime --verbose -j1"
timeout 200 $T --filter "gpu_runtime/@(sym_kernels_4gpus|sym_pdl|sym_streams|sym_rounds|sym_direct|sym_direct_copy_engine|sym_group_peers|sym_graph_replays|sym_empty_blocks|sym_choice|sym_direct_choice|sym_group_peers_choice|window_forget|baked_plans_4gpus|graph_replays|groups|several_streams|two_communicators|one_process_per_gpu)" > $R/tests4.txt 2>&1
rc=$?; pack; echo "tests4 rc=$rc"; grep -E "^\[(FAIL)|Synthesis|Assertion" $R/tests4.txt | head -12
CUDA_VISIBLE_DEVICES=0,1 timeout 60 $T --filter "gpu_runtime/@(sym_kernels_2gpus|sym_streams|sym_pdl|sym_direct|sym_group_peers|baked_plans_2gpus)" > $R/tests2.txt 2>&1
rc=$?; pack; echo "tests2 rc=$rc"; grep -E "^\[(FAIL)|Synthesis|Assertion" $R/tests2.txt | head -6
grep -h -E "^\[PASS\]" $R/tests4.txt $R/tests2.txt | sed 's/.*:://' | paste -sd' '
LD_LIBRARY_PATH="$NCCL_LIB:$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 90 .carry/shim/test_gpu_shim --jobs 1 --verbose > $R/shim.txt 2>&1
rc=$?; pack; echo "shim rc=$rc"; grep -E "^\[FAIL|Synthesis" $R/shim.txt
TORCH_SYMMMEM=NCCL LD_PRELOAD=$PWD/.carry/shim/libnccl.so.2 timeout 90 /opt/torch/.venv/bin/torchrun --nproc-per-node 4 bench/torch_symm_mem.py > $R/symm.txt 2>&1
rc=$?; pack; echo "torchrun rc=$rc"; grep -c "exact" $R/symm.txt; grep -v exact $R/symm.txt | grep -i -E "wrong|error|differ" | head -4
G="--graph 10 --iters 10 --warmup 3 --factor 4"
timeout 110 $B/coll_bench --ranks 4 $G --min 16 --max 1G --csv $R/g4.csv --svg $R/g4.svg > $R/g4.txt 2>&1; rc=$?; pack; echo "g4 rc=$rc"
timeout 50 $B/coll_bench --ranks 4 $G --min 16 --max 16M --window --csv $R/w4.csv > $R/w4.txt 2>&1; rc=$?; pack; echo "w4 rc=$rc"
CUDA_VISIBLE_DEVICES=0,1 timeout 30 $B/coll_bench --ranks 2 $G --min 16 --max 64K --csv $R/g2.csv > $R/g2.txt 2>&1; rc=$?; pack; echo "g2 rc=$rc"
E="--colls allreduce,allgather,reducescatter,alltoall --min 8 --max 32K --factor 4 --batch --iters 200 --warmup 20"
timeout 40 $B/coll_bench --ranks 4 $E --csv $R/e4.csv > $R/e4.txt 2>&1; rc=$?; pack; echo "e4 rc=$rc"
CUDA_VISIBLE_DEVICES=0,1 timeout 30 $B/coll_bench --ranks 2 $E --csv $R/e2.csv > $R/e2.txt 2>&1; rc=$?; pack; echo "e2 rc=$rc"
for c in g4 w4 g2 e4 e2; do echo "== $c (kiln/NCCL us, speed-up, errors)"; rows $R/$c.csv; done
# Then session 15's library (coll_bench_A) against this one, alternating twice: graphs, 4 GPUs,
# plain buffers, 16 B-1 MiB.
for i in 1 2; do
  for v in A B; do
    bin=$B/coll_bench; [ $v = A ] && bin=$B/coll_bench_A
    timeout 40 $bin --ranks 4 $G --min 16 --max 1M --csv $R/ab_${v}_$i.csv > $R/ab_${v}_$i.txt 2>&1
  done
done
pack
echo "== A session 15 against B this library (graphs, 4 GPUs, plain): B/A"
(cd bench && $(command -v python3 || echo /opt/torch/.venv/bin/python) ab.py $R/ab_A_*.csv -- $R/ab_B_*.csv | awk 'NR>1 {printf "%s %s%s %s | ", substr($1,1,4), $2, $3, $NF} END {print ""}')
