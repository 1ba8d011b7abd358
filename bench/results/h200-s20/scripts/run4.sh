# s20 run 4: the final build (the flag functions in kiln_dev.h, used by kernels and tests; the
# kernels' PTX the same as runs 1-3's): both new tests and a set of sym and plan suites.
RUN=r4 . scripts/device-pre.sh
suite final 300 'sym_lines_apart|plan_ll_stale_slots|sym_choice|sym_group_peers_choice|sym_kernels_2gpus|sym_ll128_2gpus|sym_kernels_4gpus|baked_plans_2gpus|baked_plans_4gpus|synthesized_plans_2gpus|synthesized_plans_4gpus|sym_pdl|sym_rounds'
grep -h -E "^\[PASS\]" $R/final.txt | sed 's/.*:://' | paste -sd' '
