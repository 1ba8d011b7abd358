# s18 run 7 (4 GPUs, lent again): run 6's pack. The early trigger on 4 ranks: the 4-GPU suites on C
# (B5 and the spin test once per 64 polls, which run 6 showed 5-7% slower at 1 MiB on 2 GPUs and is
# dropped: the library keeps B5), PyTorch's symmetric memory under torchrun; graphs 4 GPUs 16 B-1 MiB
# A, B5, C twice alternating; B5's tables (graphs plain 16 B-1 GiB, windows 16 B-16 MiB, eager).
RUN=r7 . scripts/device-pre.sh
NG=$(wc -l < $OUT/gpus.txt); [ $NG -gt 4 ] && NG=4
T="$B/test_gpu_runtime --verbose -j1"
timeout 200 $T --filter "gpu_runtime/@(sym_kernels_4gpus|sym_pdl|sym_streams|sym_rounds|sym_group_peers|sym_graph_replays|sym_empty_blocks|sym_choice|graph_replays|groups|several_streams|two_communicators|one_process_per_gpu|sym_missing_peer_times_out)" > $R/tests4.txt 2>&1
rc=$?; pack; echo "tests4 rc=$rc"; grep -E "^\[(FAIL)|Synthesis|Assertion" $R/tests4.txt | head -12
grep -h -E "^\[PASS\]" $R/tests*.txt | sed 's/.*:://' | paste -sd' '
TORCH_SYMMMEM=NCCL LD_PRELOAD=$PWD/.carry/shim/libnccl.so.2 timeout 90 /opt/torch/.venv/bin/torchrun --nproc-per-node $NG bench/torch_symm_mem.py > $R/symm.txt 2>&1
rc=$?; pack; echo "torchrun rc=$rc"; grep -h "exact" $R/symm.txt | head -4; grep -v exact $R/symm.txt | grep -i -E "wrong|error|differ" | head -4
G="--graph 10 --iters 10 --warmup 3 --factor 4"
for i in 1 2; do
  for v in A B5 C; do
    bin=$B/coll_bench; [ $v != C ] && bin=$B/coll_bench_$v
    timeout 40 $bin --ranks $NG $G --min 16 --max 1M --csv $R/ab_${v}_$i.csv > $R/ab_${v}_$i.txt 2>&1
  done
  pack
done
E="--colls allreduce,allgather,reducescatter,alltoall --min 8 --max 32K --factor 4 --batch --iters 200 --warmup 20"
timeout 110 $B/coll_bench_B5 --ranks $NG $G --min 16 --max 1G --csv $R/g$NG.csv > $R/g$NG.txt 2>&1; rc=$?; pack; echo "g$NG rc=$rc"
timeout 50 $B/coll_bench_B5 --ranks $NG $G --min 16 --max 16M --window --csv $R/w$NG.csv > $R/w$NG.txt 2>&1; rc=$?; pack; echo "w$NG rc=$rc"
timeout 40 $B/coll_bench_B5 --ranks $NG $E --csv $R/e$NG.csv > $R/e$NG.txt 2>&1; rc=$?; pack; echo "e$NG rc=$rc"
PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
for v in B5 C; do
  echo "== A (c8577fc) against $v (graphs, $NG GPUs, plain): $v/A"
  (cd bench && $PY ab.py $R/ab_A_*.csv -- $R/ab_${v}_*.csv | awk 'NR>1 {printf "%s %s%s %s | ", substr($1,1,4), $2, $3, $NF} END {print ""}')
done
for c in g$NG w$NG e$NG; do echo "== $c (kiln/NCCL us, speed-up, errors)"; rows $R/$c.csv; done
grep -h " e[1-9]" $R/*.txt | head -5
