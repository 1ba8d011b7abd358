#!/bin/bash
# session 9, device call 5: the final build (copy-engine form from 128 MiB on windows, copies in
# growing rounds, LL own-operand prefetch). GPU suites, drop-in suite, PyTorch symmetric memory
# through the drop-in with the copy-engine form at every zero-copy size (KILN_SYM_CE_BYTES=0: one
# process per GPU, peers' windows imported), graphs 8 B-1 GiB plain and windows, eager batched
# 8 B-32 KiB, plain alltoall 256 MiB-1 GiB as copies (KILN_SYM_A2A_BIG_BYTES) vs default.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
mkdir -p .carry/shim/cudart && cp -L .carry/lib/libcudart.so* .carry/shim/cudart/
P=/opt/torch/.venv/bin/python
REAL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
nvidia-smi -L > $L/gpus.txt
( . scripts/carry-libs.sh; device_env $PWD/.carry/lib
  B=.carry/bin/coll_bench
  timeout 300 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_direct|sym_direct_copy_engine|sym_direct_choice|sym_rounds|sym_kernels_2gpus|sym_graph_replays|sym_empty_blocks|sym_choice|groups|several_streams|two_communicators|graph_replays|one_process_per_gpu|missing_peer_times_out|supports_and_load_errors|large_buffers)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
  KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 120 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
  timeout 120 $B --ranks 2 --iters 10 --warmup 3 --graph 10 --min 8 --max 1G --factor 4 --csv $L/graph_plain.csv > $L/graph_plain.txt 2>&1
  timeout 120 $B --ranks 2 --iters 10 --warmup 3 --graph 10 --min 8 --max 1G --factor 4 --window --csv $L/graph_win.csv > $L/graph_win.txt 2>&1
  timeout 60 $B --ranks 2 --iters 50 --warmup 10 --batch --min 8 --max 32K --factor 8 --csv $L/eager.csv > $L/eager.txt 2>&1
  G="--ranks 2 --iters 5 --warmup 2 --graph 5 --min 256M --max 1G --factor 2 --colls alltoall"
  timeout 60 $B $G --csv $L/a2a_def.csv > /dev/null 2>&1
  KILN_SYM_A2A_BIG_BYTES=4294967296 timeout 60 $B $G --csv $L/a2a_copy.csv > /dev/null 2>&1 )
export NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=1
LD_LIBRARY_PATH=$PWD/.carry/shim/cudart:$LD_LIBRARY_PATH LD_PRELOAD=$PWD/.carry/shim/libnccl.so.2 KILN_NCCL_PATH=$REAL KILN_DEBUG=INFO KILN_SYM_CE_BYTES=0 TORCH_SYMMMEM=NCCL timeout -k 5 120 $P -m torch.distributed.run --nproc-per-node 2 bench/torch_symm_mem.py > $L/symm_kiln_ce.txt 2>&1; echo "rc $?" >> $L/symm_kiln_ce.txt
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
grep -E 'FAIL|rc |checked|Synthesis' logs/tests.txt | head -20; grep -E 'FAIL|rc |Synthesis' logs/shim.txt | head -4
echo "== symm kiln (copy engine)"; grep -E "exact|differ|rc |Error|WARN|sym-|zero copy" logs/symm_kiln_ce.txt | sed 's/pid [0-9]*: //' | sort | uniq -c | head -20
for f in graph_plain graph_win eager; do awk -F, -v f=$f 'NR>1 {n++; if($26>=1.0) k++; else printf "  behind: %s %s %.2f vs %.2f\n", $1, $7, $22, $10; e+=$17+$21+$25} END {print f": "k"/"n" rows >= 1.0x, errors "e}' logs/$f.csv; done
awk -F, 'NR>1 && $7>=268435456 {printf "%s %s %s sym %.1f nccl %.1f busbw %.1f\n", FILENAME, $1, $7, $22, $10, $24}' logs/graph_plain.csv logs/graph_win.csv
paste -d, logs/a2a_def.csv logs/a2a_copy.csv | awk -F, 'NR>1 {printf "a2a %s def %.1f copy %.1f nccl %.1f err %s%s\n", $7, $22, $49, $10, $25, $52}'
rm -rf logs
