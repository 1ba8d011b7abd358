# Run 3 (4 GPUs): the library as committed at the session's start (42eda21) on whatever card
# comes: graph tables 16 B-1 GiB on 4 and 2 GPUs (one process), blocks of 1 KiB of segment
# against 2 (KILN_SYM_BLOCK_BYTES), LL12 lines from 32 KiB against 8 (the H100 A/B owed since
# s24), the 4-GPU table with a process per GPU, then GPU suites not run with this build.
RUN=r3 . scripts/device-pre.sh
G="--graph 10 --iters 10 --warmup 3 --factor 4"
timeout 60 $B/coll_bench --ranks 4 $G --min 16 --max 1G --csv $R/g4.csv > $R/g4.txt 2>&1; echo "g4 rc=$?"; pack
(export CUDA_VISIBLE_DEVICES=0,1; timeout 60 $B/coll_bench --ranks 2 $G --min 16 --max 1G --csv $R/g2.csv > $R/g2.txt 2>&1; echo "g2 rc=$?"); pack
(export CUDA_VISIBLE_DEVICES=0,1; envab 2 bb2 KILN_SYM_BLOCK_BYTES=1024 --ranks 2 $G --min 16 --max 1M)
envab 2 bb4 KILN_SYM_BLOCK_BYTES=1024 --ranks 4 $G --min 16 --max 1M
envab 2 l12 KILN_SYM_LL12_BYTES=32768 --ranks 4 $G --min 4K --max 1M
timeout 150 $B/coll_bench --ranks 4 --mp $G --min 16 --max 1G --csv $R/mpg4.csv > $R/mpg4.txt 2>&1; echo "mpg4 rc=$?"; pack
suite t 270 'sym_ll12_8ranks_shared|sym_ll128_8ranks_shared|two_communicators|window_forget|baked_plans_4gpus|synthesized_plans_4gpus|plan_ll_stale_slots|graph_replays_after_scratch_growth|missing_peer_times_out'
grep -h -E "^\[(PASS|FAIL|SKIP)" $R/t.txt | sed 's/.*:://' | grep -v disabled | paste -sd' '
cat $OUT/gpus.txt
echo "== g4"; rows $R/g4.csv
echo "== g2"; rows $R/g2.csv
echo "== mpg4"; rows $R/mpg4.csv
ab Abb2 Bbb2; ab Abb4 Bbb4; ab Al12 Bl12
