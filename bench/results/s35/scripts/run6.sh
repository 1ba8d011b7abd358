# Run 6 (2x H200): scripts/quickstart.sh itself on the GPUs, with this session's build (this
# machine has no apt for its set-up: KILN_QUICKSTART_PREBUILT=1 over a folder of the carried
# binaries): synthesize, verify and simulate the hgx-h100 allreduce, profile the 2 GPUs, synthesize
# the two allreduce plans for them (LL x4 up to 256 KiB, Simple x32 above) and run them beside NCCL.
RUN=${RUN:-r6} . scripts/device-pre.sh
t0=$(date +%s)
qb=$PWD/qsb
mkdir -p $qb/bench $qb/tests/gpu
ln -sf $B/kiln $qb/kiln; ln -sf $B/coll_bench $qb/bench/coll_bench; ln -sf $B/test_gpu_runtime $qb/tests/gpu/test_gpu_runtime
KILN_QUICKSTART_PREBUILT=1 timeout 300 scripts/quickstart.sh $qb > $R/quickstart.txt 2>&1
echo "quickstart rc=$? ($(( $(date +%s) - t0 )) s)"
cp -r $qb/quickstart $R/; pack
tail -24 $R/quickstart.txt
cat $OUT/gpus.txt
