# s18 run 2, second call: lines per peer (PROBE_W) and two polls in flight (PROBE_POLL cycles apart).
export NCCL_NVLS_ENABLE=0
P=.carry/pdl_probe
for i in 1 2; do
for W in 1 8 16 32 64 128 256; do
  T=$((2*W)); [ $T -lt 32 ] && T=32
  for poll in 0 150 300; do PROBE_W=$W PROBE_POLL=$poll $P xchgio 2 1 $T; done
done
done 2>&1 | tee $OUT/probe2.txt
