#!/bin/bash
# session 11, device call 1: session 10's last build (HEAD 874a656) on 4 GPUs: the GPU suites and
# the drop-in suite (host changes since run 8: windows forgotten at ncclMemFree, the newest window
# taken where windows overlap); PyTorch's symmetric memory through kiln with zero copy from 1 MiB
# on 4 GPUs (run 9's failure), with SM stores and the copy engine, and with the defaults;
# eager host time per call; what profilers the machine has.
. bench/results/h200x4-s11/scripts/pre.sh
T='sym_direct|sym_direct_copy_engine|sym_direct_choice|sym_rounds|sym_kernels_4gpus|sym_graph_replays|sym_empty_blocks|sym_choice|groups|several_streams|two_communicators|graph_replays|one_process_per_gpu|missing_peer_times_out|supports_and_load_errors|baked_plans_4gpus'
timeout 170 .carry/bin/test_gpu_runtime --verbose -j1 --filter "gpu_runtime/@($T)" > $L/tests4.txt 2>&1; echo "rc $?" >> $L/tests4.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 60 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
rm -f .carry/shim/test_gpu_shim
export OMP_NUM_THREADS=1
S="LD_LIBRARY_PATH=$PWD/.carry/shim/cudart:$LD_LIBRARY_PATH LD_PRELOAD=$PWD/.carry/shim/libnccl.so.2 KILN_NCCL_PATH=$REAL KILN_DEBUG=INFO TORCH_SYMMMEM=NCCL"
for v in "d1m KILN_SYM_DIRECT_BYTES=1048576" "d1m_ce0 KILN_SYM_DIRECT_BYTES=1048576 KILN_SYM_CE_BYTES=0" "default"; do
  set -- $v; n=$1; shift
  env $S "$@" timeout -k 5 60 $P -m torch.distributed.run --nproc-per-node 4 bench/torch_symm_mem.py > $L/symm_$n.txt 2>&1; echo "rc $?" >> $L/symm_$n.txt
done
for th in 1 0; do
  KILN_GROUP_THREADS=$th timeout 40 $B --ranks 4 --colls allreduce --iters 50 --warmup 10 --batch --host-time --min 8 --max 64K --factor 4 --csv $L/e4_t$th.csv > $L/e4_t$th.txt 2>&1
done
timeout 30 .carry/bin/host_bench --gpus 4 > $L/host_bench.txt 2>&1
(which perf nsys ncu; ls /usr/local/cuda*/bin | head -50) > $L/tools.txt 2>&1
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
grep -E 'FAIL|rc |Synthesis' logs/tests4.txt logs/shim.txt | head -20
for f in logs/symm_*.txt; do echo "== $f"; grep -E "exact|differ|rc |Error|forget|zero copy" $f | sed 's/pid [0-9]*: //' | sort | uniq -c | head -12; done
for f in logs/e4_t*.txt; do echo "== $f"; grep -iE "host|allreduce" $f | head -12; done
cat logs/host_bench.txt; head -3 logs/tools.txt
rm -rf logs
