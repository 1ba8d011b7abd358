# Run 1: where the one-shot reductions' extra time at 64 KiB segments goes. The kernel alone
# (scripts/sym_probe.cu, float, graphs of 20 PDL-chained kernels): allreduce 64 KiB against
# allgather / alltoall of the same line traffic (256 KiB calls), and variants of sym.cuh's bodyLL
# receive (built with the patched copy first on the include path; timing only, their checks fail
# where they change results): nored (a peer's line stored instead of the reduction, own operand
# still loaded), nomine (own operand not loaded, zeros reduced), stat (OpSum at compile time
# instead of the run-time op), late (own operand loaded after the peers' lines arrived).
export NCCL_NVLS_ENABLE=0
R=$OUT/r1; mkdir -p $R
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader > $R/gpus.txt
S=.carry/s24
p() { local b=$1; shift; echo "$b $* $(timeout 30 $S/$b "$@" 2>&1 | grep -o '[0-9.]* us per kernel.*')"; }
for i in 1 2 3; do
  for c in "ar12 65536 4" "ag12 262144 4" "rs12 262144 4" "a2a12 262144 4" "ar 65536 4" "ag 262144 4" \
           "rs 262144 4" "ar 16384 4" "ag 65536 4" "ar12 65536 2" "ag12 131072 2"; do
    p sp0 $c
  done
  for v in sp_nored sp_nomine sp_stat sp_late; do
    for c in "ar12 65536 4" "ar 65536 4" "rs12 262144 4" "ar12 65536 2"; do p $v $c; done
  done
  for bb in 1024 4096; do echo "bb=$bb $(PROBE_BLOCK_BYTES=$bb p sp0 ar12 65536 4)"; done
done > $R/probe.txt 2>&1
tar czf $OUT/r1.tgz -C $OUT r1
sed -E 's/ us per kernel.*//' $R/probe.txt | awk '{ t = $NF; $NF = ""; k = $0; v[k] = v[k] " " t; if (!(k in o)) { o[k] = ++m; ks[m] = k } }
  END { for (i = 1; i <= m; i++) print ks[i] ":" v[ks[i]] }'
