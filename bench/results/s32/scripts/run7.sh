# Run 7 (2x H200, lent near the session's end): the drop-in's GPU suite (the reaper and
# references, the stream joins, the abort's memory: none had run on GPUs), the runtime's new
# 2-GPU tests (creation agreed on when one rank fails, abort with NCCL) and the 2-GPU suites
# through kilnCommCreateAll/kilnCommCreate's new agreement, then kiln against NCCL 2.28.9 in one
# process, graphs of 10, 16 B-64 MiB (the small calls issue 5 is about).
RUN=r7 . scripts/device-pre.sh
t0=$(date +%s)
RN=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
LD_LIBRARY_PATH="$(dirname $RN):$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 \
  KILN_TEST_REAL_NCCL=$RN timeout 200 .carry/shim/test_gpu_shim --verbose -j1 > $R/shim.txt 2>&1; echo "shim rc=$? ($(( $(date +%s) - t0 )) s)"; pack
grep -h -E "^\[(PASS|FAIL)|Synthesis|GPU 0 after|Assert" $R/shim.txt | sed 's/.*:://' | paste -sd' '
suite t 230 'comm_create_fails_on_every_rank_when_one_cannot|abort_frees_after_kernels_leave_2gpus|one_process_per_gpu|groups|graph_replays_after_scratch_growth|classic_plans_2gpus|sym_kernels_2gpus|sym_missing_peer_times_out|calls_of_a_form_the_plan_does_not_claim_refused' KILN_TEST_REQUIRE_GPUS=1
grep -h -E "^\[(PASS|FAIL)|abort \(" $R/t.txt | sed 's/.*:://' | paste -sd' '
echo "suites done ($(( $(date +%s) - t0 )) s)"
timeout 60 $B/coll_bench --ranks 2 --graph 10 --iters 10 --warmup 3 --factor 4 --min 16 --max 64M --csv $R/g2.csv > $R/g2.txt 2>&1; echo "g2 rc=$? ($(( $(date +%s) - t0 )) s)"; pack
cat $OUT/gpus.txt
echo "== g2 (size kiln/nccl speedup errors)"; rows $R/g2.csv
