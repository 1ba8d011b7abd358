# s17 run 8 (4 GPUs): the library as committed (run 6's and allreduce two-shot from 128 KiB on 4
# ranks): the symmetric kernels' GPU suites on 4 GPUs, then graphs, 4 GPUs, 16 B-4 MiB twice.
RUN=r8 . scripts/device-pre.sh
cat $OUT/gpus.txt
timeout 200 $B/test_gpu_runtime --verbose -j1 --filter "gpu_runtime/@(sym_choice|sym_kernels_4gpus|sym_pdl|sym_rounds|sym_streams|sym_graph_replays|sym_missing_peer_times_out|sym_empty_blocks)" > $R/tests4.txt 2>&1
rc=$?; pack; echo "tests4 rc=$rc"; grep -E "^\[(FAIL)|Synthesis|Assertion" $R/tests4.txt | head -12
G="--graph 10 --iters 10 --warmup 3 --factor 4"
for i in 1 2; do
  timeout 40 $B/coll_bench --ranks 4 $G --min 16 --max 4M --csv $R/g4_$i.csv > $R/g4_$i.txt 2>&1
done
pack
for i in 1 2; do echo "== g4 run $i"; rows $R/g4_$i.csv; done
