# s17 run 5 (4 GPUs, lent again): G = this build (74e17a8 and the LL body specialized at compile
# time for its algorithm too, lineBodyOf) on 4 GPUs for the first time: the GPU suites; then F =
# 74e17a8's coll_bench against G alternating twice (graphs, 4 GPUs 16 B-1 MiB; 2 GPUs, both at
# KILN_SYM_LL_BYTES=524288, the 2-rank default F's binary predates); the tables on G (graphs plain
# 16 B-1 GiB, windows 16 B-16 MiB, eager); the drop-in suite and torchrun; session 16's library (A)
# against G twice; KILN_SYM_LL_BYTES 128 / 256 / 512 KiB on 4 ranks; 2-GPU suites and tables last.
RUN=r5 . scripts/device-pre.sh
cat $OUT/gpus.txt
NG=$(wc -l < $OUT/gpus.txt); [ $NG -gt 4 ] && NG=4
T="$B/test_gpu_runtime --verbose -j1"
PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
ab() { (cd bench && $PY ab.py $1 -- $2 | awk 'NR>1 {printf "%s %s%s %s | ", substr($1,1,4), $2, $3, $NF} END {print ""}'); }
timeout 240 $T --filter "gpu_runtime/@(sym_kernels_4gpus|sym_pdl|sym_streams|sym_rounds|sym_direct|sym_direct_copy_engine|sym_group_peers|sym_graph_replays|sym_empty_blocks|sym_choice|sym_direct_choice|sym_group_peers_choice|window_forget|baked_plans_4gpus|graph_replays|groups|several_streams|two_communicators|one_process_per_gpu|sym_missing_peer_times_out)" > $R/tests4.txt 2>&1
rc=$?; pack; echo "tests4 rc=$rc"; grep -E "^\[(FAIL)|Synthesis|Assertion" $R/tests4.txt | head -12
G="--graph 10 --iters 10 --warmup 3 --factor 4"
for i in 1 2; do
  for v in F G; do
    bin=$B/coll_bench; [ $v = F ] && bin=$B/coll_bench_F
    timeout 40 $bin --ranks 4 $G --min 16 --max 1M --csv $R/fg4_${v}_$i.csv > $R/fg4_${v}_$i.txt 2>&1
    CUDA_VISIBLE_DEVICES=0,1 KILN_SYM_LL_BYTES=524288 timeout 30 $bin --ranks 2 $G --min 16 --max 1M --csv $R/fg2_${v}_$i.csv > $R/fg2_${v}_$i.txt 2>&1
  done
  pack
done
for c in fg4 fg2; do echo "== $c: F against G (size G/F)"; ab "$R/${c}_F_*.csv" "$R/${c}_G_*.csv"; done
E="--colls allreduce,allgather,reducescatter,alltoall --min 8 --max 32K --factor 4 --batch --iters 200 --warmup 20"
timeout 110 $B/coll_bench --ranks 4 $G --min 16 --max 1G --csv $R/g4.csv --svg $R/g4.svg > $R/g4.txt 2>&1; rc=$?; pack; echo "g4 rc=$rc"
timeout 50 $B/coll_bench --ranks 4 $G --min 16 --max 16M --window --csv $R/w4.csv > $R/w4.txt 2>&1; rc=$?; pack; echo "w4 rc=$rc"
timeout 40 $B/coll_bench --ranks 4 $E --csv $R/e4.csv > $R/e4.txt 2>&1; rc=$?; pack; echo "e4 rc=$rc"
for c in g4 w4 e4; do echo "== $c (kiln/NCCL us, speed-up, errors)"; rows $R/$c.csv; done
LD_LIBRARY_PATH="$NCCL_LIB:$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 90 .carry/shim/test_gpu_shim --jobs 1 --verbose > $R/shim.txt 2>&1
rc=$?; pack; echo "shim rc=$rc"; grep -E "^\[FAIL|Synthesis" $R/shim.txt
TORCH_SYMMMEM=NCCL LD_PRELOAD=$PWD/.carry/shim/libnccl.so.2 timeout 90 /opt/torch/.venv/bin/torchrun --nproc-per-node 4 bench/torch_symm_mem.py > $R/symm.txt 2>&1
rc=$?; pack; echo "torchrun rc=$rc"; grep -c "exact" $R/symm.txt; grep -v exact $R/symm.txt | grep -i -E "wrong|error|differ" | head -4
for i in 1 2; do
  for v in A G; do
    bin=$B/coll_bench; [ $v = A ] && bin=$B/coll_bench_A
    timeout 40 $bin --ranks 4 $G --min 16 --max 1M --csv $R/ab_${v}_$i.csv > $R/ab_${v}_$i.txt 2>&1
  done
done
pack; echo "== A session 16 against G (graphs, 4 GPUs, plain): G/A"; ab "$R/ab_A_*.csv" "$R/ab_G_*.csv"
for ll in 131072 262144 524288; do
  KILN_SYM_LL_BYTES=$ll timeout 40 $B/coll_bench --ranks 4 $G --min 64K --max 4M --csv $R/ll${ll}.csv > $R/ll${ll}.txt 2>&1
done
pack
for ll in 262144 524288; do echo "== 4 GPUs KILN_SYM_LL_BYTES 128 KiB against $ll: B/A"; ab "$R/ll131072.csv" "$R/ll${ll}.csv"; done
CUDA_VISIBLE_DEVICES=0,1 timeout 100 $T --filter "gpu_runtime/@(sym_kernels_2gpus|sym_streams|sym_pdl|sym_direct|sym_group_peers|sym_missing_peer_times_out|baked_plans_2gpus)" > $R/tests2.txt 2>&1
rc=$?; pack; echo "tests2 rc=$rc"; grep -E "^\[(FAIL)|Synthesis|Assertion" $R/tests2.txt | head -6
CUDA_VISIBLE_DEVICES=0,1 timeout 60 $B/coll_bench --ranks 2 $G --min 16 --max 1G --csv $R/g2.csv > $R/g2.txt 2>&1; pack
CUDA_VISIBLE_DEVICES=0,1 timeout 30 $B/coll_bench --ranks 2 $E --csv $R/e2.csv > $R/e2.txt 2>&1; pack
for c in g2 e2; do echo "== $c"; rows $R/$c.csv; done
