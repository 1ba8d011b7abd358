# Run 11 (2x H200), the session's last build (after the review's mends): kiln profile (its link
# plan now declares its 32 channels) and scripts/quickstart.sh over the carried binaries, its table
# now in CUDA graphs of 10 calls.
RUN=r11 . scripts/device-pre.sh
t0=$(date +%s)
timeout 120 $B/kiln profile --gpus 2 > $R/profile.txt 2>&1; echo "profile rc=$? ($(( $(date +%s) - t0 )) s)"; cat $R/profile.txt | head -4
qb=$PWD/qsb; mkdir -p $qb/bench $qb/tests/gpu
ln -sf $B/kiln $qb/kiln; ln -sf $B/coll_bench $qb/bench/coll_bench; ln -sf $B/test_gpu_runtime $qb/tests/gpu/test_gpu_runtime
KILN_QUICKSTART_PREBUILT=1 timeout 300 scripts/quickstart.sh $qb > $R/quickstart.txt 2>&1
echo "quickstart rc=$? ($(( $(date +%s) - t0 )) s)"; cp -r $qb/quickstart $R/; rm -rf $R/quickstart/plans; pack
tail -22 $R/quickstart.txt
cat $OUT/gpus.txt
