#!/bin/bash
# session 12, device call 7: LL calls with blocks by role (KILN_SYM_LL_ROLES_BYTES, 16 KiB) and the
# PDL suite: GPU suites on 4 and 2 GPUs; graphs 16 B-64 KiB, 4 GPUs plain and windows, 2 GPUs,
# with blocks by role (default) against without (KILN_SYM_LL_ROLES_BYTES=0), same call.
. bench/results/h200x4-s12/scripts/pre.sh
T='sym_kernels_4gpus|sym_pdl|sym_rounds|sym_direct|sym_direct_copy_engine|sym_group_peers|sym_graph_replays|graph_replays|groups|several_streams|two_communicators|sym_choice|sym_direct_choice|sym_group_peers_choice|one_process_per_gpu'
timeout 260 .carry/bin/test_gpu_runtime --verbose -j1 --filter "gpu_runtime/@($T)" > $L/tests4.txt 2>&1; echo "rc $?" >> $L/tests4.txt
CUDA_VISIBLE_DEVICES=0,1 timeout 120 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_kernels_2gpus|sym_pdl|sym_group_peers|sym_direct_copy_engine)' > $L/tests2.txt 2>&1; echo "rc $?" >> $L/tests2.txt
G="--iters 20 --warmup 5 --graph 10 --min 16 --max 64K --factor 2"
for rb in 16384 0; do
  KILN_SYM_LL_ROLES_BYTES=$rb timeout 30 $B --ranks 4 $G --csv $L/g4_r$rb.csv > $L/g4_r$rb.txt 2>&1
  KILN_SYM_LL_ROLES_BYTES=$rb timeout 30 $B --ranks 4 $G --window --csv $L/w4_r$rb.csv > $L/w4_r$rb.txt 2>&1
  KILN_SYM_LL_ROLES_BYTES=$rb timeout 30 $B --ranks 2 $G --csv $L/g2_r$rb.csv > $L/g2_r$rb.txt 2>&1
done
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
grep -E 'FAIL|rc |Synthesis|Assert|calls checked' logs/tests4.txt logs/tests2.txt | head -40
behind logs/g4_r16384.csv logs/w4_r16384.csv logs/g2_r16384.csv
cmp logs/g4_r0.csv logs/g4_r16384.csv
cmp logs/w4_r0.csv logs/w4_r16384.csv
cmp logs/g2_r0.csv logs/g2_r16384.csv
rm -rf logs
