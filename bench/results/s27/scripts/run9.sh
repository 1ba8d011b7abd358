# Run 9 (2 GPUs): what ships at the end: e902d5d with LL12 alltoall's sends as before (run 8's
# sp_v7, in kernels/sym.cuh), the full build. The GPU suites of the line forms (every dtype and
# op against the CPU on fresh random data), the drop-in's suite, LL12 lines with 8 ranks sharing
# the 2 GPUs; the kernel alone against the committed kernels of 4cda2fd (sym_probe_A), two
# alternations; the library in graphs of 10 against 4cda2fd's build (coll_bench_A), one after
# the other (ABBA): the aligned float sizes 4-256 KiB and the float sizes 24 B x 3^k.
RUN=r9 . scripts/device-pre.sh
suite t 300 'sym_kernels_2gpus|sym_ll12_2gpus|sym_ll128_2gpus|sym_lines_apart|sym_pdl|sym_graph_replays|sym_rounds|sym_empty_blocks|sym_streams|one_process_per_gpu'
grep -h -E "^\[(PASS|FAIL|SKIP)" $R/t.txt | sed 's/.*:://' | grep -v disabled | paste -sd' '
RN=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
LD_LIBRARY_PATH="$(dirname $RN):$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 \
  KILN_TEST_REAL_NCCL=$RN timeout 150 .carry/shim/test_gpu_shim --verbose -j1 > $R/shim.txt 2>&1; echo "shim rc=$?"; pack
grep -h -E "^\[====\] Synthesis" $R/shim.txt
suite t8 120 'sym_ll12_8ranks_shared'
grep -h -E "^\[====\] Synthesis" $R/t8.txt
export PROBE_CHECK=2
for i in 1 2; do
  for c in "a2a12 65536" "a2a12 32768" "a2a12 24" "a2a 24" "a2a 8" "rs 24" "rs 8" "ag 24" "ar 12" "ar12 16384" "rs 32"; do
    set -- $c
    probe2 $B/sym_probe_A $B/sym_probe "$1-$2-$i" $1 $2 2 >> $R/p.txt
  done
  pack
done
unset PROBE_CHECK
G="--ranks 2 --graph 10 --iters 20 --warmup 3"
for i in 1 2; do
  timeout 60 $B/coll_bench_A $G --factor 2 --min 4K --max 256K --csv $R/Aal_$i.csv > $R/Aal_$i.txt 2>&1
  timeout 60 $B/coll_bench $G --factor 2 --min 4K --max 256K --csv $R/Bal_$i.csv > $R/Bal_$i.txt 2>&1
  timeout 60 $B/coll_bench $G --factor 3 --min 24 --max 160K --csv $R/Bodd_$i.csv > $R/Bodd_$i.txt 2>&1
  timeout 60 $B/coll_bench_A $G --factor 3 --min 24 --max 160K --csv $R/Aodd_$i.csv > $R/Aodd_$i.txt 2>&1
  pack
done
cat $OUT/gpus.txt
probetab $R/p.txt
ab Aal Bal
ab Aodd Bodd
