# s14 run 1: the LL receive re-reading every peer's missing line together instead of one peer after
# another (kernels/sym.cuh recvLines). The committed library before it (.carry/old.tar.xz) and
# after it (.carry/pack.tar.xz) in the same call: suites with it, then graphs and eager calls of
# both, alternated; the direct allgather's block count on windows (KILN_SYM_DIRECT_BLOCKS);
# nvl_bench: the copy engine and SM stores pushing to the peers at once (cesm) against each alone.
RUN=r1 . scripts/device-pre.sh
mkdir -p .carry/old && tar xJf .carry/old.tar.xz -C .carry/old
O=$PWD/.carry/old/bin
cat $OUT/gpus.txt
T="$B/test_gpu_runtime --verbose -j1"
timeout 120 $T --filter "gpu_runtime/@(sym_kernels_4gpus|sym_pdl|sym_streams|sym_graph_replays|sym_empty_blocks)" > $R/tests4.txt 2>&1
rc=$?; pack; echo "tests4 rc=$rc"; grep -E "^\[(PASS|FAIL)|Synthesis|Assertion" $R/tests4.txt | head -12
CUDA_VISIBLE_DEVICES=0,1 timeout 60 $T --filter "gpu_runtime/@(sym_kernels_2gpus|sym_streams)" > $R/tests2.txt 2>&1
rc=$?; pack; echo "tests2 rc=$rc"; grep -E "^\[(PASS|FAIL)|Synthesis|Assertion" $R/tests2.txt | head -6
G="--graph 10 --iters 20 --warmup 5 --min 16 --max 64K --factor 4"
for k in 1 2; do
  for v in old:$O new:$B; do
    name=${v%%:*}; bin=${v#*:}
    timeout 60 $bin/coll_bench --ranks 4 $G --csv $R/g4_${name}_$k.csv > $R/g4_${name}_$k.txt 2>&1; echo "g4 $name $k rc=$?"
    timeout 60 $bin/coll_bench --ranks 4 $G --window --csv $R/w4_${name}_$k.csv > $R/w4_${name}_$k.txt 2>&1; echo "w4 $name $k rc=$?"
    CUDA_VISIBLE_DEVICES=0,1 timeout 60 $bin/coll_bench --ranks 2 $G --csv $R/g2_${name}_$k.csv > $R/g2_${name}_$k.txt 2>&1; echo "g2 $name $k rc=$?"
    timeout 60 $bin/coll_bench --ranks 4 --colls allreduce --min 8 --max 64K --factor 2 --batch --iters 200 --warmup 20 --csv $R/e4_${name}_$k.csv > $R/e4_${name}_$k.txt 2>&1; echo "e4 $name $k rc=$?"
    pack
  done
done
for nb in 32 64 128; do
  KILN_SYM_DIRECT_BLOCKS=$nb timeout 60 $B/coll_bench --ranks 4 --colls allgather,alltoall --graph 10 --iters 20 --warmup 5 --min 256K --max 16M --factor 2 --window --csv $R/wd_$nb.csv > $R/wd_$nb.txt 2>&1
  echo "wd $nb rc=$?"; pack
done


for n in 4 2; do for by in 32M 256M; do
  CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((n - 1))) timeout 60 $B/nvl_bench --gpus $n --bytes $by --iters 5 --only ce,cesm,sm > $R/nvl${n}_$by.txt 2>&1
  echo "nvl $n $by rc=$?"; pack
done; done
for f in $R/nvl*_*.txt; do echo "-- $(basename $f .txt)"; grep -E "^(ce|cesm|sm) " $f | awk '$1 != "sm" || ($2 == 128 && $3 == 512 && $5 == 0)'; done
cd bench; PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
for c in g4 w4 g2 e4; do echo "== $c: A = before, B = the new receive"; ${PY:-python3} ab.py $R/${c}_old_*.csv -- $R/${c}_new_*.csv; done
for nb in 32 64; do echo "== windows direct: A = 128 blocks, B = $nb"; ${PY:-python3} ab.py $R/wd_128.csv -- $R/wd_$nb.csv; done
