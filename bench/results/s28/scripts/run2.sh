# Run 2 (1x H200): what run 1's limit left: the interpreter's classic plans with 8 ranks on the
# one GPU, then every other test of the runtime suite (those that need 2 or more GPUs skip).
RUN=r2 . scripts/device-pre.sh
suite classic 400 'classic_plans_8ranks_shared'
suite rest 120 '!(*_8ranks_shared)'
for f in classic rest; do echo "$f: $(grep -h -E '^\[(PASS|FAIL)' $R/$f.txt | sed 's/.*:://' | grep -v disabled | paste -sd' ')"; grep -h -E "^\[====\] Synthesis" $R/$f.txt; done
grep -c "SKIP" $R/rest.txt
cat $OUT/gpus.txt
