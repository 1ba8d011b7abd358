# Run 4 (a 2-GPU machine: the 4-GPU kinds were no longer lent): eager calls with a process per GPU
# timed as nccl-tests does (coll_bench --mp --batch: 20 calls back to back between one event pair
# per rank, the processes meeting on the host before each of 5 batches), 16 B-64 KiB, and one
# process driving both GPUs the same way (--batch); 8 ranks on 2 GPUs (four per GPU, a quarter of
# the SMs each); the classic plans' sweep on 2 GPUs with the scratch change.
RUN=r4 . scripts/device-pre.sh
timeout 90 $B/coll_bench --ranks 2 --mp --batch --iters 20 --warmup 5 --factor 4 --min 16 --max 64K --csv $R/mpb2.csv > $R/mpb2.txt 2>&1
echo "mpb2 rc=$?"; pack; rows $R/mpb2.csv
timeout 90 $B/coll_bench --ranks 2 --batch --iters 20 --warmup 5 --factor 4 --min 16 --max 64K --csv $R/sb2.csv > $R/sb2.txt 2>&1
echo "sb2 rc=$?"; pack; rows $R/sb2.csv
for t in sym_kernels_8ranks_shared n8_plans_8ranks_shared synthesized_plans_8ranks_shared classic_plans_8ranks_shared \
         classic_plans_2gpus; do
  suite $t 150 $t
  grep -h -E "^\[(PASS|FAIL)|plans of plans|calls checked" $R/$t.txt | head -4
done
