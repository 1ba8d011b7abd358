# Run 2: run 1 found the one-shot reductions' extra time in the run-time op (OpDyn's switch per
# element: the compile-time sum took allreduce 64 KiB LL12 from 3.64 to 3.01 us). The kernel
# alone (sym_probe, float, graphs of 20 PDL-chained kernels): sp0 the committed sym.cuh; sp_stat
# run 1's OpSum in reduceLine (sum only, for reference); sp_sel OpDyn without branches (every op
# computed, the call's picked by selects); sp_top the candidate: the line bodies templated on the
# op, the kernel choosing OpSum for sum and avg, OpDyn for the rest, once at its start. Outputs
# checked against the CPU (sp_stat only for sum). Then the SASS of the old and stat kernels.
export NCCL_NVLS_ENABLE=0
R=$OUT/r2; mkdir -p $R
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader > $R/gpus.txt
S=.carry/s24
p() { local b=$1; shift; echo "$b ${PROBE_OP:-sum} $* $(timeout 30 $S/$b "$@" 2>&1 | grep -o '[0-9.]* us per kernel.*')"; }
for i in 1 2; do
  for c in "ar12 65536 4" "ar 65536 4" "rs12 262144 4" "rs 262144 4" "ar 1024 4" "ar12 1024 4" "ar 16384 4" \
           "ar12 16384 4" "rs 16384 4" "ar 16 4" "ar12 131072 4" "rs12 524288 4" "ar128 262144 4" \
           "ar12 65536 2" "ar 16384 2" "ar 1024 2"; do
    for b in sp0 sp_stat sp_sel sp_top; do p $b $c; done
  done
  for o in max avg; do
    for c in "ar12 65536 4" "ar 1024 4" "ar 16384 2"; do
      for b in sp0 sp_sel sp_top; do PROBE_OP=$o p $b $c; done
    done
  done
done > $R/probe.txt 2>&1
for o in sum prod max min avg; do
  for c in "ar12 65536 4" "rs12 262144 4" "ar 4096 4" "ar128 262144 4" "ar12 65536 2"; do
    echo "check $o $c $(PROBE_OP=$o PROBE_CHECK=20 timeout 30 $S/sp_top $c 2 20 2>&1 | tail -1)"
  done
done > $R/check.txt 2>&1
CO=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)
for k in base stat; do $CO -sass $S/$k.cubin > $R/$k.sass 2>&1; done
tar czf $OUT/r2.tgz -C $OUT r2
sed -E 's/ us per kernel.*//' $R/probe.txt | awk '{ t = $NF; $NF = ""; k = $0; v[k] = v[k] " " t; if (!(k in o)) { o[k] = ++m; ks[m] = k } }
  END { for (i = 1; i <= m; i++) print ks[i] ":" v[ks[i]] }'
grep -c "WRONG\|ERROR" $R/probe.txt; grep -v " 0 WRONG" $R/check.txt | grep -i "wrong\|error" | head; wc -l $R/check.txt $R/*.sass
