#!/bin/bash
# session 12, device call 9: the trigger for the next kernel moved after the body's last wait for
# a peer (review: triggered at the start, the next kernel's waiting blocks could hold SMs that a
# second communicator's kernel needs). GPU suites with it; graphs with PDL against without, same
# call: 4 GPUs plain 16 B-1 GiB, windows and 2 GPUs 16 B-64 KiB.
. bench/results/h200x4-s12/scripts/pre.sh
T='sym_pdl|sym_kernels_4gpus|sym_rounds|sym_graph_replays|several_streams|two_communicators'
timeout 150 .carry/bin/test_gpu_runtime --verbose -j1 --filter "gpu_runtime/@($T)" > $L/tests4.txt 2>&1; echo "rc $?" >> $L/tests4.txt
CUDA_VISIBLE_DEVICES=0,1 timeout 60 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_pdl|sym_kernels_2gpus)' > $L/tests2.txt 2>&1; echo "rc $?" >> $L/tests2.txt
G="--iters 10 --warmup 3 --graph 10 --factor 4"
for pdl in 1 0; do
  KILN_SYM_PDL=$pdl timeout 45 $B --ranks 4 $G --min 16 --max 1G --csv $L/g4_p$pdl.csv > $L/g4_p$pdl.txt 2>&1
  KILN_SYM_PDL=$pdl timeout 20 $B --ranks 4 $G --min 16 --max 64K --window --csv $L/w4_p$pdl.csv > $L/w4_p$pdl.txt 2>&1
  KILN_SYM_PDL=$pdl timeout 20 $B --ranks 2 $G --min 16 --max 64K --csv $L/g2_p$pdl.csv > $L/g2_p$pdl.txt 2>&1
done
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
grep -E 'FAIL|rc |Synthesis|Assert' logs/tests4.txt logs/tests2.txt | head -20
behind logs/g4_p1.csv logs/w4_p1.csv logs/g2_p1.csv
cmp logs/g4_p0.csv logs/g4_p1.csv
cmp logs/w4_p0.csv logs/w4_p1.csv
cmp logs/g2_p0.csv logs/g2_p1.csv
rm -rf logs
