# s13 run 3: the symmetric kernels launched through the driver (kernels/launch.cu), validated and
# measured against the runtime's launch (KILN_LAUNCH_DRIVER=0) in the same call.
. scripts/device-pre.sh
R=$OUT/r3; mkdir -p $R
pack() { tar czf $OUT/r3.tgz -C $OUT r3 gpus.txt; }   # after every step: a cut-off call keeps what ran
cat $OUT/gpus.txt
T="$B/test_gpu_runtime --verbose -j1"
timeout 330 $T --filter "gpu_runtime/@(sym_streams|sym_kernels_4gpus|sym_pdl|sym_rounds|sym_direct|sym_direct_copy_engine|sym_group_peers|sym_graph_replays|graph_replays|groups|several_streams|two_communicators|sym_choice|sym_direct_choice|sym_group_peers_choice|one_process_per_gpu|sym_empty_blocks|window_forget)" > $R/tests4.txt 2>&1
rc=$?; pack; echo "tests4 rc=$rc"; grep -E "^\[(PASS|FAIL)|Synthesis|Assertion|diff|:[0-9]+: " $R/tests4.txt | grep -v "^\[----\] *$" | head -30
CUDA_VISIBLE_DEVICES=0,1 timeout 100 $T --filter "gpu_runtime/@(sym_streams|sym_kernels_2gpus|sym_pdl|sym_group_peers)" > $R/tests2.txt 2>&1
rc=$?; pack; echo "tests2 rc=$rc"; grep -E "^\[(PASS|FAIL)|Synthesis|Assertion" $R/tests2.txt | head
LD_LIBRARY_PATH="$NCCL_LIB:$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 120 .carry/shim/test_gpu_shim --jobs 1 --verbose > $R/shim.txt 2>&1
rc=$?; pack; echo "shim rc=$rc"; grep -E "Synthesis" $R/shim.txt
TORCH_SYMMMEM=NCCL LD_PRELOAD=$PWD/.carry/shim/libnccl.so.2 timeout 120 /opt/torch/.venv/bin/torchrun --nproc-per-node 4 bench/torch_symm_mem.py > $R/symm.txt 2>&1
rc=$?; pack; echo "torchrun rc=$rc"; grep -E "exact" $R/symm.txt | head -4
timeout 60 $B/host_bench --gpus 4 --iters 20000 > $R/host4.txt 2>&1; tail -7 $R/host4.txt
E="--colls allreduce,allgather,reducescatter,alltoall --min 8 --max 64K --factor 2 --batch --host-time --iters 200 --warmup 20"
for n in 4 2; do
 for v in "drv:" "rt:KILN_LAUNCH_DRIVER=0"; do
  name=${v%%:*}; envs=${v#*:}
  env $envs timeout 150 $B/coll_bench --ranks $n $E --csv $R/e${n}_$name.csv > $R/e${n}_$name.txt 2>&1
  rc=$?; pack; echo "== eager n$n $name rc=$rc"
 done
done
timeout 200 $B/coll_bench --ranks 4 --graph 10 --min 16 --max 1G --factor 4 --iters 10 --warmup 3 --csv $R/g4.csv > $R/g4.txt 2>&1
rc=$?; pack; echo "== g4 rc=$rc"
rm -rf $R
echo "== summary (kiln us / nccl us, speed-up; err)"
tar xzf $OUT/r3.tgz -C /tmp && for f in /tmp/r3/e4_drv /tmp/r3/e4_rt /tmp/r3/e2_drv /tmp/r3/e2_rt; do
  echo "$f"; awk -F, 'NR>1 {printf "%s %s %s/%s x%s e%s | ", substr($1,1,4), $7, $22, $10, $26, $25} END {print ""}' $f.csv; done
awk -F, 'NR>1 {printf "%s %s %s/%s x%s e%s | ", substr($1,1,4), $7, $22, $10, $26, $25} END {print ""}' /tmp/r3/g4.csv
