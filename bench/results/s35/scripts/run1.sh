# Run 1 (2x H200): where the 2-GPU small allreduce's time goes, at the build session 34 left
# (no kernel changed since session 33). (a) The same small sizes in CUDA graphs of 10, 20 (the
# calls nccl-tests captures per graph by default, -n 20 -G) and 100 calls, kiln and NCCL in the
# same run: how much of a row is the graph's launch boundary. (b) The LL kernel alone
# (sym_probe, graphs of 20), allreduce at 1-64 KiB, with 1, 2 and 4 KiB of segment per block:
# what makes 4 KiB cost ~0.27 us more than 1 KiB in the tables.
RUN=r1 . scripts/device-pre.sh
t0=$(date +%s)
for g in 10 20 100; do
  timeout 150 $B/coll_bench --ranks 2 --graph $g --iters 15 --warmup 3 --factor 4 --min 16 --max 1M --csv $R/g$g.csv > $R/g$g.txt 2>&1
  echo "g$g rc=$? ($(( $(date +%s) - t0 )) s)"; pack
done
for bb in 1024 2048 4096; do
  for s in 1024 2048 3072 4096 8192 16384 65536; do
    echo "bb=$bb s=$s $(PROBE_BLOCK_BYTES=$bb timeout 20 $B/sym_probe ar $s 2 20 300 2>&1 | grep -o '[0-9.]* us per kernel.*')"
  done
done > $R/probe.txt 2>&1
for s in 1024 4096 16384 65536; do
  echo "ar12 s=$s $(timeout 20 $B/sym_probe ar12 $s 2 20 300 2>&1 | grep -o '[0-9.]* us per kernel.*')"
  echo "ag s=$s $(timeout 20 $B/sym_probe ag $s 2 20 300 2>&1 | grep -o '[0-9.]* us per kernel.*')"
done >> $R/probe.txt 2>&1
pack
echo "probes ($(( $(date +%s) - t0 )) s)"
cat $R/probe.txt | paste -sd'|' 
for g in 10 20 100; do echo "== graph $g"; rows $R/g$g.csv; done
cat $OUT/gpus.txt
