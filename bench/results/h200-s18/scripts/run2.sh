# s18 run 2: scripts/pdl_probe.cu on 2 GPUs (two device calls; the second is run2_lines.sh).
# First call: the sequence number read before griddepcontrol.wait ("early": stored and fenced
# before a trigger that thread 0 alone gives after a barrier) against after it.
export NCCL_NVLS_ENABLE=0; P=.carry/pdl_probe
for i in 1 2; do
  for m in seq seqearly seqearlychk xchgio xchgiopre xchgioearly xchgiopreearly xchgiopreearlychk; do
    $P $m 2 1 512; $P $m 2 1 64
  done
  $P empty 2 1 64; $P xchgiopreearly 2 1 64 100 1000
done 2>&1 | tee $OUT/probe.txt
