. scripts/device-pre.sh
cat $OUT/gpus.txt
timeout 120 $B/host_bench --gpus 4 --iters 20000 > $OUT/host4.txt 2>&1; cat $OUT/host4.txt
timeout 120 $B/host_bench --gpus 2 --iters 20000 > $OUT/host2.txt 2>&1; cat $OUT/host2.txt
for pdl in 1 0; do for n in 4 2; do
KILN_SYM_PDL=$pdl timeout 120 $B/coll_bench --ranks $n --colls allreduce --min 8 --max 64K --factor 16 --batch --host-time --iters 200 --warmup 20 --csv $OUT/e${n}_pdl$pdl.csv > $OUT/e${n}_pdl$pdl.txt 2>&1
echo "== n$n pdl$pdl rc=$?"; grep "host:" $OUT/e${n}_pdl$pdl.txt | grep -v interp
done; done
