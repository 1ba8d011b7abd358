# Run 9 (2x H200), this session's final build: `kiln profile` measuring the link's beta with 32
# threadblocks (and one threadblock's, printed), scripts/quickstart.sh again on it (its plans'
# ranges met by the registry's narrowest-loaded rule), then the GPU suites: test_gpu_runtime's
# every suite for 1 and 2 GPUs but the 8-ranks-sharing ones (KILN_TEST_REQUIRE_GPUS=1), and the
# drop-in's suite under the real NCCL 2.28.9.
RUN=r9 . scripts/device-pre.sh
t0=$(date +%s)
timeout 120 $B/kiln profile --gpus 2 -o $R/profiled.xml > $R/profile.txt 2>&1; echo "profile rc=$? ($(( $(date +%s) - t0 )) s)"; cat $R/profile.txt
qb=$PWD/qsb; mkdir -p $qb/bench $qb/tests/gpu
ln -sf $B/kiln $qb/kiln; ln -sf $B/coll_bench $qb/bench/coll_bench; ln -sf $B/test_gpu_runtime $qb/tests/gpu/test_gpu_runtime
KILN_QUICKSTART_PREBUILT=1 timeout 300 scripts/quickstart.sh $qb > $R/quickstart.txt 2>&1
echo "quickstart rc=$? ($(( $(date +%s) - t0 )) s)"; cp -r $qb/quickstart $R/; rm -rf $R/quickstart/plans; pack
grep -A3 '== profile' $R/quickstart.txt | tail -3; grep -E '^ +[0-9]+ ' $R/quickstart.txt | awk '{print $1, $4, $5, $12, $16, $NF}' | paste -sd'|'
KILN_TEST_REQUIRE_GPUS=1 timeout 420 $B/test_gpu_runtime --jobs 1 --verbose --filter 'gpu_runtime/!(*_8ranks_shared)' > $R/rt.txt 2>&1
echo "runtime suites rc=$?"; pack; grep -E "Synthesis" $R/rt.txt
grep -h -E "^\[(PASS|FAIL)" $R/rt.txt | sed 's/.*:://' | paste -sd' ' | cut -c1-3000
echo "suites ($(( $(date +%s) - t0 )) s)"
RN=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
LD_LIBRARY_PATH="$(dirname $RN):$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 \
  KILN_TEST_REAL_NCCL=$RN timeout 150 .carry/shim/test_gpu_shim --verbose -j1 > $R/shim.txt 2>&1; echo "shim rc=$? ($(( $(date +%s) - t0 )) s)"; pack
grep -h -E "^\[(FAIL)|Synthesis" $R/shim.txt | sed 's/.*:://' | paste -sd' '
cat $OUT/gpus.txt
