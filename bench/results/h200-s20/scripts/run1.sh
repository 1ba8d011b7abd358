# s20 run 1: stale staging and slots. The two new tests on the old library (a0a9111, session 19's
# last commit; built with the two tests added: bin/test_gpu_runtime_old) and on the new one (the
# line forms' staging of their own, the plans' LL flag pair): each must fail on the old and pass on
# the new. Then the plan suites (the LL flag pair is in every plan kernel) and the sym suites.
RUN=r1 . scripts/device-pre.sh
timeout 120 $B/test_gpu_runtime_old --verbose -j1 --filter 'gpu_runtime/@(sym_lines_apart|plan_ll_stale_slots)' > $R/old_stale.txt 2>&1
echo "old rc=$?"; grep -E "^\[FAIL|^\[PASS|Synthesis|Assertion|expected|rank" $R/old_stale.txt | head -12; pack
suite new_stale 120 'sym_lines_apart|plan_ll_stale_slots'
grep -h -E "^\[PASS\]" $R/new_stale.txt | sed 's/.*:://' | paste -sd' '
suite plans 330 'classic_plans_2gpus|classic_plans_4gpus|baked_plans_2gpus|baked_plans_4gpus|synthesized_plans_2gpus|synthesized_plans_4gpus|missing_peer_times_out|supports_and_load_errors'
grep -h -E "^\[PASS\]" $R/plans.txt | sed 's/.*:://' | paste -sd' '
suite sym 240 'sym_kernels_4gpus|sym_ll128_4gpus|sym_kernels_2gpus|sym_ll128_2gpus|sym_rounds|sym_pdl|sym_streams|sym_graph_replays|sym_direct|sym_group_peers|sym_group_peers_choice|sym_choice|sym_direct_choice|groups|two_communicators|one_process_per_gpu|sym_missing_peer_times_out|window_forget'
grep -h -E "^\[PASS\]" $R/sym.txt | sed 's/.*:://' | paste -sd' '
