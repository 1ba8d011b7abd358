# Run 3 (1x H200): scripts/quickstart.sh's one-GPU step, by hand (the device has no apt for its
# set-up): synthesize the allreduce for hgx-h100 (8 GPUs) from its sketch, verify it, then run
# it with its 8 ranks sharing the one GPU through test_gpu_runtime's new plan_files test (every
# dtype and op against the CPU), with two more plans beside it (2 and 4 ranks sharing the GPU);
# then a plan whose blocks do not fit a rank's share (plans/n8's i16 alltoall: 112 a rank), which
# must fail naming it.
RUN=r3 . scripts/device-pre.sh
P=$R/allreduce-hgx-h100.xml
$B/kiln synth --topo hgx-h100 --sketch plans/sketches/hgx-h100.xml --coll allreduce -o $P > $R/synth.txt 2>&1
echo "synth rc=$?"
$B/kiln verify $P >> $R/synth.txt 2>&1
echo "verify rc=$?"
KILN_TEST_PLAN_FILES=$P:plans/baked/allreduce-n2-oneshot-ll-chain-i16.xml:plans/baked/allgather-n4-direct-ll-i4.xml \
  timeout 300 $B/test_gpu_runtime --jobs 1 --filter 'gpu_runtime/plan_files' > $R/plan_files.txt 2>&1
echo "plan_files rc=$?"; pack
KILN_TEST_PLAN_FILES=plans/n8/alltoall-n8-direct-simple-i16.xml \
  timeout 120 $B/test_gpu_runtime --jobs 1 --filter 'gpu_runtime/plan_files' > $R/plan_files_too_big.txt 2>&1
echo "plan_files (too big) rc=$? (1 wanted)"; pack
cat $R/plan_files.txt $R/plan_files_too_big.txt | grep -v "^\[----\]" | head -30
cat $OUT/gpus.txt
