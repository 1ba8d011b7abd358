# s13 run 4: sym_streams (its plan call's output buffer fixed) on 4 and 2 GPUs, with the driver's
# launch and the runtime's; a process per GPU, eager, driver against runtime launches.
. scripts/device-pre.sh
R=$OUT/r4; mkdir -p $R
pack() { tar czf $OUT/r4.tgz -C $OUT r4 gpus.txt; }
cat $OUT/gpus.txt
T="$B/test_gpu_runtime --verbose -j1 --filter gpu_runtime/sym_streams"
for v in "drv:" "rt:KILN_LAUNCH_DRIVER=0"; do
  name=${v%%:*}; envs=${v#*:}
  env $envs timeout 60 $T > $R/streams4_$name.txt 2>&1; rc=$?
  env $envs CUDA_VISIBLE_DEVICES=0,1 timeout 60 $T > $R/streams2_$name.txt 2>&1; rc2=$?
  pack; echo "sym_streams $name: 4 GPUs rc=$rc, 2 GPUs rc=$rc2"; grep -h -E "Synthesis|Assertion|count" $R/streams*_$name.txt | head -6
done
for v in "drv:" "rt:KILN_LAUNCH_DRIVER=0"; do
  name=${v%%:*}; envs=${v#*:}
  env $envs timeout 150 $B/coll_bench --ranks 4 --mp --colls allreduce,allgather --min 16 --max 64K --factor 4 --iters 100 --warmup 20 --csv $R/mp4_$name.csv > $R/mp4_$name.txt 2>&1; rc=$?
  pack; echo "== mp4 $name rc=$rc"; awk -F, 'NR>1 {printf "%s %s %s/%s x%s e%s | ", substr($1,1,4), $7, $22, $10, $26, $25} END {print ""}' $R/mp4_$name.csv
done
