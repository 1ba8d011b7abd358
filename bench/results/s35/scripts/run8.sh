# Run 8 (2x H200): run 7's broadcast rows in graphs (forwarded to NCCL by the drop-in, which does
# not run broadcast) were 0.88-0.97x PyTorch's own NCCL at 1-64 KiB float32 and level in
# bfloat16: noise, or a cost of the drop-in's communicator? Broadcast alone, 1 KiB-1 MiB, 100
# calls a graph, twice over.
RUN=r8 . scripts/device-pre.sh
t0=$(date +%s)
for i in 1 2; do
  OUT=$R/b$i GPUS=2 COLLS=broadcast SIZES=1K,64K,1M DTYPES=float32,bfloat16 ITERS=100 timeout 200 scripts/device-shim.sh > $R/b$i.txt 2>&1
  echo "b$i rc=$? ($(( $(date +%s) - t0 )) s)"; pack
  grep graph $R/b$i/table.txt
done
cat $OUT/gpus.txt
