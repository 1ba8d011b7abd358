# Run 4: the line bodies' common start folded into one struct (kernels/sym.cuh LineCall; same
# registers and stack for every form, the two-shot LL form's code byte for byte the same, the
# others a few instructions in another order): the sym suites on the new library; the kernel alone,
# sp_A (193a88a's sym.cuh) against sp_B (the fold), LL and LL128 one-shot forms, twice
# alternating; allreduce 256 KiB-4 MiB (two-shot LL and LL128) through the library, A =
# coll_bench_A (193a88a), B = the new build, twice alternating; then the new build's table, graphs,
# 4 GPUs, 16 B-1 GiB.
RUN=r4 . scripts/device-pre.sh
suite tests 240 'sym_kernels_4gpus|sym_kernels_2gpus|sym_ll128_4gpus|sym_ll128_2gpus|sym_lines_apart|sym_choice|sym_graph_replays|sym_rounds|sym_pdl'
grep -h -E "^\[PASS\]" $R/tests.txt | sed 's/.*:://' | paste -sd' '
tar xf .carry/s21.tar -C .carry
P=.carry/s21
for i in 1 2; do
  for a in ar ag rs a2a ar128 a2a128; do
    for b in 1024 16384 65536; do probe2 $P/sp_A $P/sp_B "$a $b n4" $a $b 4 20 200; done
  done
  for a in ar ar128; do (export CUDA_VISIBLE_DEVICES=0,1; probe2 $P/sp_A $P/sp_B "$a 65536 n2" $a 65536 2 20 200); done
done > $R/probe.txt 2>&1
pack
awk '{ k = $4 " " $2 " " $3; v[k] = v[k] " " $1 "=" $5 } END { for (k in v) print k ":" v[k] }' $R/probe.txt | sort
abruns 2 4 --ranks 4 --graph 10 --iters 10 --warmup 3 --factor 2 --min 256K --max 4M --colls allreduce
ab A4 B4
grep -h " e[1-9]" $R/*.txt | head -5
timeout 150 $B/coll_bench --ranks 4 --graph 10 --iters 10 --warmup 3 --factor 4 --min 16 --max 1G --csv $R/g4.csv > $R/g4.txt 2>&1
echo "g4 rc=$?"; pack
rows $R/g4.csv
