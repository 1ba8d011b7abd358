# Run 4 (2 GPUs): what ships: run 3's kernels (bodyLL's loads and stores of every peer's piece
# whole or branch-free, picked once per line; loadWords and storeWords for 1- and 2-byte elements
# elsewhere) in the full build. The GPU suites of run 1, the drop-in's suite, 8 ranks sharing the
# 2 GPUs; the kernel alone against the committed kernels (sym_probe_A), two alternations; the
# library in graphs of 10 against the committed build (coll_bench_A, a clean clone of 4cda2fd),
# one after the other: float at 24 B x 3^k (twice; every reducescatter and alltoall piece and
# two-shot share an odd number of floats), int8 at 6 B x 3^k and half at 12 B x 3^k (pieces at
# odd byte and 2-byte offsets), the aligned float table 16 B-1 MiB x4.
RUN=r4 . scripts/device-pre.sh
suite t 420 'sym_kernels_2gpus|sym_ll12_2gpus|sym_ll128_2gpus|sym_lines_apart|sym_choice|sym_kernels_exist|sym_pdl|sym_streams|sym_graph_replays|sym_rounds|sym_direct|sym_direct_choice|sym_direct_copy_engine|sym_group_peers|sym_group_peers_choice|sym_empty_blocks|sym_missing_peer_times_out|groups|graph_replays|several_streams|one_process_per_gpu|supports_and_load_errors|baked_plans_2gpus|plan_ll_stale_slots|synthesized_plans_2gpus|synthesized_plans_verified_at_runtime_fifo_depth|classic_plans_2gpus'
grep -h -E "^\[(PASS|FAIL|SKIP)" $R/t.txt | sed 's/.*:://' | grep -v disabled | paste -sd' '
RN=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
LD_LIBRARY_PATH="$(dirname $RN):$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 \
  KILN_TEST_REAL_NCCL=$RN timeout 150 .carry/shim/test_gpu_shim --verbose -j1 > $R/shim.txt 2>&1; echo "shim rc=$?"; pack
grep -h -E "^\[(PASS|FAIL|SKIP)|Synthesis" $R/shim.txt | sed 's/.*:://' | paste -sd' '
suite t8 200 'sym_kernels_8ranks_shared|sym_ll12_8ranks_shared'
grep -h -E "^\[====\]" $R/t8.txt
export PROBE_CHECK=2
for i in 1 2; do
  for c in "rs 8" "rs 24" "rs 32" "rs 2056" "rs12 24" "rs12 48" "a2a 8" "a2a 24" "a2a 32" "ag 24" "ag 32" "ar 12" "ar 16" "ar 4100" "ar 4096" "ar12 16388" "ar12 16384" "ar128 262148" "ar128 262144"; do
    set -- $c
    probe2 $B/sym_probe_A $B/sym_probe "$1-$2-$i" $1 $2 2 >> $R/p.txt
  done
  pack
done
unset PROBE_CHECK
G="--ranks 2 --graph 10 --iters 10 --warmup 3"
abruns 2 odd $G --factor 3 --min 24 --max 160K
abruns 1 i8 $G --dtype int8 --factor 3 --min 6 --max 50K
abruns 1 h $G --dtype half --factor 3 --min 12 --max 100K
abruns 1 al $G --factor 4 --min 16 --max 1M
cat $OUT/gpus.txt
probetab $R/p.txt
ab Aodd Bodd
ab Ai8 Bi8
ab Ah Bh
ab Aal Bal
echo "== B odd"; rows $R/Bodd_1.csv
echo "== B al"; rows $R/Bal_1.csv
