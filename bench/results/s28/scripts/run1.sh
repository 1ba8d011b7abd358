# Run 1 (1x H200: the only kind lent this session): d15260c's full build (loadWhole/storeWhole,
# LineData::loadBy/storeBy; the drop-in's zero-copy lookup as one bool) with test_gpu_runtime
# running its suites of 8 ranks sharing a GPU where there is one (new). Those six suites, 8 ranks
# on the one H200 (16 SMs a rank; every dtype and op against the CPU on fresh random data), then
# the rest of the runtime suite (those that need 2 or more GPUs skip, naming why).
RUN=r1 . scripts/device-pre.sh
suite ll12 110 'sym_ll12_8ranks_shared'
suite ll 110 'sym_kernels_8ranks_shared'
suite ll128 110 'sym_ll128_8ranks_shared'
suite synth 100 'synthesized_plans_8ranks_shared'
suite n8 100 'n8_plans_8ranks_shared'
for f in ll12 ll ll128 synth n8; do echo "$f: $(grep -h -E '^\[(PASS|FAIL|SKIP)' $R/$f.txt | sed 's/.*:://' | grep -v disabled | paste -sd' ')"; grep -h -E "^\[====\] Synthesis|calls checked|checked, " $R/$f.txt; done
cat $OUT/gpus.txt
