# s13 run 6: the engine's copies into the peers all at once (a stream per peer) against one after
# the other (KILN_SYM_CE_PARALLEL=0), same call: the suites that take the engine forms, and graphs
# of 64 MiB-1 GiB (plain buffers of one process and windows).
. scripts/device-pre.sh
R=$OUT/r6; mkdir -p $R
pack() { tar czf $OUT/r6.tgz -C $OUT r6 gpus.txt; }
cat $OUT/gpus.txt
T="$B/test_gpu_runtime --verbose -j1"
timeout 150 $T --filter "gpu_runtime/@(sym_direct_copy_engine|sym_group_peers|sym_direct|sym_streams|sym_graph_replays)" > $R/tests4.txt 2>&1
rc=$?; pack; echo "tests4 rc=$rc"; grep -E "^\[(PASS|FAIL)|Synthesis|Assertion" $R/tests4.txt | head -12
CUDA_VISIBLE_DEVICES=0,1 timeout 60 $T --filter "gpu_runtime/@(sym_direct_copy_engine|sym_group_peers)" > $R/tests2.txt 2>&1
rc=$?; pack; echo "tests2 rc=$rc"; grep -E "Synthesis" $R/tests2.txt
KILN_SYM_CE_BYTES=0 KILN_SYM_AR_CE_BYTES=0 TORCH_SYMMMEM=NCCL LD_PRELOAD=$PWD/.carry/shim/libnccl.so.2 timeout 120 /opt/torch/.venv/bin/torchrun --nproc-per-node 4 bench/torch_symm_mem.py > $R/symm_ce.txt 2>&1
rc=$?; pack; echo "torchrun (engine at every zero-copy size) rc=$rc"; grep -E "exact" $R/symm_ce.txt | head -4
G="--ranks 4 --graph 4 --colls allgather,alltoall,allreduce --min 64M --max 1G --factor 2 --iters 10 --warmup 2"
for w in "" "--window"; do
 for v in "par:" "seq:KILN_SYM_CE_PARALLEL=0"; do
  name=${v%%:*}; envs=${v#*:}
  env $envs timeout 150 $B/coll_bench $G $w --csv $R/g4${w:+_win}_$name.csv > $R/g4${w:+_win}_$name.txt 2>&1
  rc=$?; pack; echo "== graphs 4 GPUs ${w:-plain} $name rc=$rc"
  awk -F, 'NR>1 {printf "%s %s %s/%s x%s bus%s e%s | ", substr($1,1,4), $7, $22, $10, $26, $24, $25} END {print ""}' $R/g4${w:+_win}_$name.csv
 done
done
