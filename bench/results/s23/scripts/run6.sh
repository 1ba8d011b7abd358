# Run 6: bodyLL and the LL12 body folded into one template over the line form (kernels/sym.cuh
# LineData; LL's and LL2's PTX byte for byte the same as before, LL12's not). The suites that run
# the LL12 form, 8 ranks sharing the 4 GPUs too (the body for any rank count, never run before);
# the kernel alone, sp_A (the separate LL12 body, ae29892's sym.cuh) against sp_B (the fold), LL12
# and LL, float, 4 GPUs.
RUN=r6 . scripts/device-pre.sh
suite t 200 'sym_ll12_4gpus|sym_ll12_2gpus|sym_ll12_8ranks_shared|sym_lines_apart|sym_choice'
grep -h -E "^\[(PASS|FAIL)" $R/t.txt | sed 's/.*:://' | paste -sd' '
P=.carry/s23
for a in ar12 ag12 a2a12 rs12; do
  for b in 65536 262144; do probe2 $P/sp_A $P/sp_B "$a $b n4" $a $b 4 20 200; done
done > $R/probe.txt 2>&1
for a in ar rs; do probe2 $P/sp_A $P/sp_B "$a 16384 n4" $a 16384 4 20 200; done >> $R/probe.txt 2>&1
pack
awk '{ k = $2 " " $3 " " $4; v[k] = v[k] " " $1 "=" $5 } END { for (k in v) print k ":" v[k] }' $R/probe.txt | sort
