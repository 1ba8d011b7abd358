# Run 4 (2 GPUs: no 4-GPU kind was lent at the time): what is left in the small allreduce's kernel
# on 2 GPUs (2.68-2.83x NCCL in run 3, issue 5 wants 3x): the kernel alone (sym_probe, float,
# graphs of 20 PDL-chained kernels), sp_new the library's sym.cuh after run 3, sp_noavg without
# the avg test after the reduction, sp_alg with bodyLL's algorithm fixed to the one-shot allreduce
# (timing only). Then LL12 lines from smaller segments, same build, graphs, two alternations:
# KILN_SYM_LL12_BYTES=2048 (A) and 4096 (A of the second pair) against 8192 (B).
RUN=r4 . scripts/device-pre.sh
S=.carry/s24
p() { local b=$1; shift; echo "$b $* $(timeout 30 $S/$b "$@" 2>&1 | grep -o '[0-9.]* us per kernel.*')"; }
for i in 1 2 3; do
  for c in "ar 16 2" "ar 1024 2" "ar 16384 2" "ar12 65536 2" "rs 16384 2"; do
    for b in sp_new sp_noavg sp_alg; do p $b $c; done
  done
done > $R/probe.txt 2>&1
pack
sed -E 's/ us per kernel.*//' $R/probe.txt | awk '{ t = $NF; $NF = ""; k = $0; v[k] = v[k] " " t; if (!(k in o)) { o[k] = ++m; ks[m] = k } }
  END { for (i = 1; i <= m; i++) print ks[i] ":" v[ks[i]] }'
export KILN_SYM_LL12_BYTES=8192
envab 2 2a KILN_SYM_LL12_BYTES=2048 --ranks 2 --graph 10 --iters 20 --warmup 5 --factor 2 --min 1K --max 256K
ab A2a B2a
envab 2 2b KILN_SYM_LL12_BYTES=4096 --ranks 2 --graph 10 --iters 20 --warmup 5 --factor 2 --min 1K --max 256K
ab A2b B2b
grep -h " e[1-9]\|WRONG\|rror" $R/*.txt | head -5
