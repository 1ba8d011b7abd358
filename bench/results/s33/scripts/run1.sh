# Run 1 (2x H200): SM loads pulling from the peer against SM stores pushing and the copy engine
# (nvl_bench smpull, sm, ce), and a reducescatter whose threads load the peer's piece straight
# from its memory (rspull), against kiln's reducescatter and allreduce at 128 MiB-1 GiB in the same
# call (coll_bench, graphs): whether pulling passes the ~355 GB/s SM stores reach (issue 5's copy
# limit at >= 128 MiB).
RUN=r1 . scripts/device-pre.sh
t0=$(date +%s)
timeout 120 $B/nvl_bench --gpus 2 --bytes 128M --iters 10 --only sm,ce,smpull,rspull > $R/nvl128.txt 2>&1; echo "nvl128 rc=$? ($(( $(date +%s) - t0 )) s)"; pack
timeout 120 $B/nvl_bench --gpus 2 --bytes 512M --iters 10 --only ce,smpull,rspull > $R/nvl512.txt 2>&1; echo "nvl512 rc=$? ($(( $(date +%s) - t0 )) s)"; pack
timeout 150 $B/coll_bench --ranks 2 --graph 10 --iters 10 --warmup 3 --factor 2 --min 128M --max 1G --colls reducescatter,allreduce,allgather --csv $R/big.csv > $R/big.txt 2>&1; echo "big rc=$? ($(( $(date +%s) - t0 )) s)"; pack
cat $OUT/gpus.txt
cat $R/nvl128.txt $R/nvl512.txt
echo "== big (size kiln/nccl speedup errors)"; rows $R/big.csv
awk -F, 'NR>1{print $1, $7, $24 " GB/s busbw kiln", $12 " nccl"}' $R/big.csv
