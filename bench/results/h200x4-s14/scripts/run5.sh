# s14 run 5: the library as committed (run 4's with the plans' LL receive taken back): the suites
# that run the plans (interpreter and baked kernels) and the symmetric kernels on 4 and 2 GPUs,
# classic_plans_2gpus among them (run 3's limit cut it off), and a quick look at the small sizes.
RUN=r5 . scripts/device-pre.sh
cat $OUT/gpus.txt
suite tests4 80 "sym_kernels_4gpus|baked_plans_4gpus"
suite tests2 150 "sym_kernels_2gpus|baked_plans_2gpus|classic_plans_2gpus" CUDA_VISIBLE_DEVICES=0,1
grep -h -E "^\[PASS\]" $R/tests4.txt $R/tests2.txt | sed 's/.*:://' | paste -sd' '
timeout 30 $B/coll_bench --ranks 4 --graph 10 --iters 20 --warmup 5 --min 16 --max 64K --factor 4 --csv $R/g4.csv > $R/g4.txt 2>&1; rc=$?; pack; echo "g4 rc=$rc"
timeout 25 $B/coll_bench --ranks 4 --colls allreduce --min 8 --max 64K --factor 4 --batch --iters 200 --warmup 20 --csv $R/e4.csv > $R/e4.txt 2>&1; rc=$?; pack; echo "e4 rc=$rc"
for c in g4 e4; do echo "== $c"; rows $R/$c.csv; done
