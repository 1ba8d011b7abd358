# s13 run 2: driver launches + tickets (eager ordering) against the runtime's launch / the event.
# (KILN_SYM_TICKET was the trial build's setting; the ticket was not kept, so today's library ignores it.)
. scripts/device-pre.sh
cat $OUT/gpus.txt
T="$B/test_gpu_runtime --verbose -j1"
timeout 200 $T --filter "gpu_runtime/@(sym_streams|sym_pdl|several_streams|two_communicators|sym_kernels_4gpus|groups|sym_graph_replays|sym_direct_copy_engine|one_process_per_gpu|sym_group_peers)" > $OUT/tests4.txt 2>&1
echo "tests4 rc=$?"; grep -E "^\[(PASS|FAIL|SKIP)|Synthesis|Tested|assert|rror" $OUT/tests4.txt | head -30
timeout 60 $B/host_bench --gpus 4 --iters 20000 > $OUT/host4.txt 2>&1; tail -6 $OUT/host4.txt
timeout 60 $B/host_bench --gpus 2 --iters 20000 > $OUT/host2.txt 2>&1; tail -6 $OUT/host2.txt
E="--colls allreduce,allgather,reducescatter,alltoall --min 16 --max 64K --factor 16 --batch --host-time --iters 200 --warmup 20"
for n in 4 2; do
 for v in "new:" "nodrv:KILN_LAUNCH_DRIVER=0" "noticket:KILN_SYM_TICKET=0" "old:KILN_LAUNCH_DRIVER=0 KILN_SYM_TICKET=0"; do
  name=${v%%:*}; envs=${v#*:}
  env $envs timeout 100 $B/coll_bench --ranks $n $E --csv $OUT/e${n}_$name.csv > $OUT/e${n}_$name.txt 2>&1
  echo "== e n$n $name rc=$?"; grep "host:.*kiln-sym" $OUT/e${n}_$name.txt | awk '{printf "%s %s %s | ", $3, $4, $9}'; echo
  awk -F, 'NR>1 && $1=="allreduce" {printf "AR %s nccl %s kiln %s x%s err%s | ", $7, $10, $22, $26, $25}' $OUT/e${n}_$name.csv; echo
 done
done
# multi-process eager (a process per GPU): the ticket's tail on the GPU against the event's host cost
for v in "new:" "noticket:KILN_SYM_TICKET=0"; do
  name=${v%%:*}; envs=${v#*:}
  env $envs timeout 100 $B/coll_bench --ranks 4 --mp --colls allreduce --min 16 --max 64K --factor 16 --iters 200 --warmup 20 --csv $OUT/mp4_$name.csv > $OUT/mp4_$name.txt 2>&1
  echo "== mp4 $name rc=$?"; awk -F, 'NR>1 {printf "%s nccl %s kiln %s x%s | ", $7, $10, $22, $26}' $OUT/mp4_$name.csv; echo
done
# graphs: no change expected (ticket 0 under capture)
timeout 120 $B/coll_bench --ranks 4 --graph 10 --colls allreduce,allgather --min 16 --max 64K --factor 16 --iters 20 --warmup 5 --csv $OUT/g4.csv > $OUT/g4.txt 2>&1
echo "== g4 rc=$?"; awk -F, 'NR>1 {printf "%s %s nccl %s kiln %s x%s err%s\n", $1, $7, $10, $22, $26, $25}' $OUT/g4.csv
