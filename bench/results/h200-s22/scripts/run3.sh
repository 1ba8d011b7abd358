# Run 3: the cause of run 1's failures: a scratch buffer's growth freed the old buffer with
# cudaFree, which waits for every kernel on the GPU, among them the same call's kernel of the
# other rank there, which waits for this rank: every rank timed out (~5 s). shared_diag_A (the
# old host/exec.c) against shared_diag_B (growths keep the replaced buffer until kilnExecFree,
# doubling), cases 13-14 (a 1-element call first, so the 1003-element calls grow the scratch);
# then the 8-rank suites that failed and the suites with scratch growth inside and outside groups.
RUN=r3 . scripts/device-pre.sh
for v in A B; do timeout 60 $B/shared_diag_$v 13 14 0 > $R/diag_$v.txt 2>&1; echo "diag_$v rc=$?"; grep -v '^$' $R/diag_$v.txt | head -12; done
pack
for t in classic_plans_8ranks_shared n8_plans_8ranks_shared; do
  suite $t 240 $t
  grep -h -E "^\[(PASS|FAIL)|left out|plans of plans" $R/$t.txt | head -6
done
suite regular 240 'groups|graph_replays|several_streams|large_buffers|synthesized_plans_verified_at_runtime_fifo_depth|supports_and_load_errors|missing_peer_times_out|plan_ll_stale_slots|sym_graph_replays'
grep -h -E "^\[(PASS|FAIL)" $R/regular.txt | sed 's/.*:://' | paste -sd' '
