# s20 run 7: the review's mend of the two LL128 bodies (kernels/sym.cuh Lane128, storeWords128:
# same registers and stack, 512 bytes less code, a few instructions in another order): the LL128
# suites and the sym suites on the mended library; the kernel alone, A = sp_A (sym.cuh before the
# mend), B = sp_B (after), twice alternating; two-shot LL128 allreduce (1-2 MiB calls on 4 GPUs)
# through the library, A = coll_bench_A (60c34a3), B = the mended build, twice alternating.
RUN=r7 . scripts/device-pre.sh
suite tests 200 'sym_ll128_4gpus|sym_ll128_2gpus|sym_kernels_4gpus|sym_lines_apart|sym_choice|sym_group_peers_choice|sym_graph_replays'
grep -h -E "^\[PASS\]" $R/tests.txt | sed 's/.*:://' | paste -sd' '
tar xf .carry/probesm.tar -C .carry
for i in 1 2; do
  for a in ar128 ag128 rs128 a2a128; do
    for b in 1024 65536 262144; do
      for v in A B; do echo "sp_$v $a $b n4 $(timeout 20 .carry/pm/sp_$v $a $b 4 20 200 2>&1 | grep -o '[0-9.]* us per kernel')"; done
    done
  done
  for v in A B; do echo "sp_$v ar128 1048576 n2 $(CUDA_VISIBLE_DEVICES=0,1 timeout 20 .carry/pm/sp_$v ar128 1048576 2 20 200 2>&1 | grep -o '[0-9.]* us per kernel')"; done
done > $R/probe.txt 2>&1
pack
awk '{ k = $4 " " $2 " " $3; v[k] = v[k] " " $1 "=" $5 } END { for (k in v) print k ":" v[k] }' $R/probe.txt | sort
G="--graph 10 --iters 10 --warmup 3 --factor 2 --min 512K --max 4M --colls allreduce"
for i in 1 2; do
  timeout 60 $B/coll_bench_A --ranks 4 $G --csv $R/A4_$i.csv > $R/A4_$i.txt 2>&1
  timeout 60 $B/coll_bench --ranks 4 $G --csv $R/B4_$i.csv > $R/B4_$i.txt 2>&1
  pack
done
ab A4 B4
grep -h " e[1-9]" $R/*.txt | head -5
