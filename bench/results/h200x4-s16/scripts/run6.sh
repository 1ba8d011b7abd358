# s16 run 6: the library after review (the forms' kernels found through kernelOf instead of a
# table in the generated file; no change to any kernel meant). 4-GPU machines were no longer lent,
# so on 2 GPUs: the suites that launch every form, and graphs 2 GPUs plain 16 B-1 GiB
# (G2_MAX) once.
RUN=${RUN_NAME:-r6} . scripts/device-pre.sh  # runs 7-8: RUN_NAME, G2_MAX
cat $OUT/gpus.txt
suite tests2 200 'sym_kernels_2gpus|sym_direct|sym_pdl|sym_streams|sym_group_peers|baked_plans_2gpus'
timeout 90 $B/coll_bench --ranks 2 --graph 10 --iters 10 --warmup 3 --factor 4 --min 16 --max ${G2_MAX:-1G} --csv $R/g2.csv > $R/g2.txt 2>&1; echo "g2 rc=$?"; pack
rows $R/g2.csv
