# Run 12 (2x H200): kiln profile after its loop's clean-up was made one (no change in what it
# measures), and the new CLI test of its arguments with the GPUs present.
RUN=r12 . scripts/device-pre.sh
timeout 120 $B/kiln profile --gpus 2 --uniform -o $R/profiled.xml > $R/profile.txt 2>&1; echo "profile rc=$?"; cat $R/profile.txt
$B/kiln profile --reps 0; echo "reps 0 rc=$?"
pack
cat $OUT/gpus.txt
