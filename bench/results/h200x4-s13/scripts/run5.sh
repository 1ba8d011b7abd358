# s13 run 5: where an eager 4-GPU call's host time goes (coll_bench --host-time: queueing the
# ranks' calls vs the group's end), and the launch floor with the event (host_bench).
. scripts/device-pre.sh
cat $OUT/gpus.txt
timeout 60 $B/host_bench --gpus 4 --iters 20000 > $OUT/host4.txt 2>&1; tail -4 $OUT/host4.txt
for n in 4 2; do
timeout 100 $B/coll_bench --ranks $n --colls allreduce --min 16 --max 64K --factor 64 --batch --host-time --iters 200 --warmup 20 --csv $OUT/e$n.csv > $OUT/e$n.txt 2>&1
echo "== e$n rc=$?"; grep "host:" $OUT/e$n.txt | grep -v interp | sed 's/#   host: //'
done
