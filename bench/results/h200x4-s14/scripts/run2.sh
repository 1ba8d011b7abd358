# s14 run 2: two ways of re-reading missing LL lines against the committed library, same call:
# A = before (spins on one peer's line after another), B = every missing line re-read each turn
# (run 1's), C = the first missing line alone until it is in, then the others together; C's build
# also has the direct copies' 8 KiB per block (KILN_SYM_DIRECT_BLOCK_BYTES) and the launch
# through kilnLaunchKernel. Suites on C; direct allgather/alltoall on windows A against C.
RUN=r2 . scripts/device-pre.sh
tar xJf .carry/ab.tar.xz -C .carry   # old/bin, b/bin: their coll_bench (libraries: the pack's)
A=$PWD/.carry/old/bin; Bv=$PWD/.carry/b/bin; C=$B
cat $OUT/gpus.txt
T="$C/test_gpu_runtime --verbose -j1"
timeout 200 $T --filter "gpu_runtime/@(sym_kernels_4gpus|sym_pdl|sym_streams|sym_graph_replays|sym_empty_blocks|sym_direct|sym_direct_choice|sym_group_peers|sym_rounds)" > $R/tests4.txt 2>&1
rc=$?; pack; echo "tests4 rc=$rc"; grep -E "^\[(PASS|FAIL)|Synthesis|Assertion" $R/tests4.txt | head -12
CUDA_VISIBLE_DEVICES=0,1 timeout 60 $T --filter "gpu_runtime/@(sym_kernels_2gpus|sym_streams)" > $R/tests2.txt 2>&1
rc=$?; pack; echo "tests2 rc=$rc"; grep -E "^\[(PASS|FAIL)|Synthesis|Assertion" $R/tests2.txt | head -6
G="--graph 10 --iters 20 --warmup 5 --min 16 --max 64K --factor 4"
for k in 1 2; do
  for v in a:$A b:$Bv c:$C; do
    name=${v%%:*}; bin=${v#*:}
    timeout 60 $bin/coll_bench --ranks 4 $G --csv $R/g4_${name}_$k.csv > $R/g4_${name}_$k.txt 2>&1
    timeout 60 $bin/coll_bench --ranks 4 $G --window --csv $R/w4_${name}_$k.csv > $R/w4_${name}_$k.txt 2>&1
    CUDA_VISIBLE_DEVICES=0,1 timeout 60 $bin/coll_bench --ranks 2 $G --csv $R/g2_${name}_$k.csv > $R/g2_${name}_$k.txt 2>&1
    timeout 60 $bin/coll_bench --ranks 4 --colls allreduce --min 8 --max 64K --factor 2 --batch --iters 200 --warmup 20 --csv $R/e4_${name}_$k.csv > $R/e4_${name}_$k.txt 2>&1
    pack
  done
  for v in a:$A c:$C; do
    name=${v%%:*}; bin=${v#*:}
    timeout 60 $bin/coll_bench --ranks 4 --colls allgather,alltoall --graph 10 --iters 20 --warmup 5 --min 256K --max 16M --factor 2 --window --csv $R/wd_${name}_$k.csv > $R/wd_${name}_$k.txt 2>&1
    timeout 60 $bin/coll_bench --ranks 4 --colls allgather,alltoall --graph 10 --iters 20 --warmup 5 --min 256K --max 16M --factor 2 --csv $R/pd_${name}_$k.csv > $R/pd_${name}_$k.txt 2>&1
    pack
  done
  echo "round $k done"
done
cd bench; PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
for c in g4 w4 g2 e4; do
  echo "== $c: A before, B all re-read each turn, C the first alone then the rest"
  ${PY:-python3} ab.py $R/${c}_a_*.csv -- $R/${c}_b_*.csv > $R/ab_${c}.txt; ${PY:-python3} ab.py $R/${c}_b_*.csv -- $R/${c}_c_*.csv > $R/bc_${c}.txt
  paste -d' ' <(awk '{printf "%-14s %7s %6s | A %s B %s\n", $1, $2$3, $NF, $4, $6}' $R/ab_${c}.txt) <(awk '{printf "C %s C/B %s\n", $6, $NF}' $R/bc_${c}.txt)
done
for c in wd pd; do echo "== $c: A before, C"; ${PY:-python3} ab.py $R/${c}_a_*.csv -- $R/${c}_c_*.csv; done
pack
