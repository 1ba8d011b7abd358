# s15 run 3: the library as committed (direct copies: a block per 16 KiB from pieces of 1 MiB).
# nvl_bench: the engine's copies to the 3 peers as separate calls (ce) or one
# cudaMemcpyBatchAsync (ceb), 32 and 256 MiB per peer. Windows allgather/alltoall 512 KiB-16 MiB:
# the new block rule against the old (KILN_SYM_DIRECT_BIG_BLOCK_BYTES=8192), alternating, two runs
# each. Suites. Tables: graphs 4 GPUs plain 16 B-1 GiB, windows 16 B-16 MiB, 2 GPUs 16 B-64 KiB,
# eager 4 and 2 GPUs 8 B-32 KiB.
RUN=r3 . scripts/device-pre.sh
cat $OUT/gpus.txt
for b in 32M 256M; do timeout 60 $B/nvl_bench --gpus 4 --bytes $b --iters 20 --only ce,ceb > $R/nvl_$b.txt 2>&1; done
pack; cat $R/nvl_*.txt | grep -v "^#"
G="--graph 10 --iters 10 --warmup 3 --factor 2 --colls allgather,alltoall --window --min 512K --max 16M"
for i in 1 2; do
  KILN_SYM_DIRECT_BIG_BLOCK_BYTES=8192 timeout 40 $B/coll_bench --ranks 4 $G --csv $R/ab_0_$i.csv > $R/ab_0_$i.txt 2>&1
  timeout 40 $B/coll_bench --ranks 4 $G --csv $R/ab_1_$i.csv > $R/ab_1_$i.txt 2>&1
done
pack
suite tests4 200 'sym_direct|sym_direct_choice|sym_group_peers|sym_group_peers_choice|sym_kernels_4gpus|sym_pdl|graph_replays'
CUDA_VISIBLE_DEVICES=0,1 suite tests2 60 'sym_kernels_2gpus|sym_direct|sym_streams'
grep -h -E "^\[PASS\]" $R/tests4.txt $R/tests2.txt | sed 's/.*:://' | paste -sd' '
G="--graph 10 --iters 10 --warmup 3 --factor 4"
timeout 110 $B/coll_bench --ranks 4 $G --min 16 --max 1G --csv $R/g4.csv --svg $R/g4.svg > $R/g4.txt 2>&1; rc=$?; pack; echo "g4 rc=$rc"
timeout 50 $B/coll_bench --ranks 4 $G --min 16 --max 16M --window --csv $R/w4.csv > $R/w4.txt 2>&1; rc=$?; pack; echo "w4 rc=$rc"
CUDA_VISIBLE_DEVICES=0,1 timeout 30 $B/coll_bench --ranks 2 $G --min 16 --max 64K --csv $R/g2.csv > $R/g2.txt 2>&1; rc=$?; pack; echo "g2 rc=$rc"
E="--colls allreduce,allgather,reducescatter,alltoall --min 8 --max 32K --factor 4 --batch --iters 200 --warmup 20"
timeout 40 $B/coll_bench --ranks 4 $E --csv $R/e4.csv > $R/e4.txt 2>&1; rc=$?; pack; echo "e4 rc=$rc"
CUDA_VISIBLE_DEVICES=0,1 timeout 30 $B/coll_bench --ranks 2 $E --csv $R/e2.csv > $R/e2.txt 2>&1; rc=$?; pack; echo "e2 rc=$rc"
cd bench; PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
echo "== windows: A old block rule (8 KiB everywhere), B new (size A B NCCL B/A)"
$PY ab.py --col kiln-sym $R/ab_0_*.csv -- $R/ab_1_*.csv | awk '{print $1, $2$3, $4, $5, $6, $7, $8, $9, $NF}' | paste -sd'|' | sed 's/|/ | /g'
for c in g4 w4 g2 e4 e2; do echo "== $c (kiln/NCCL us, speed-up, errors)"; rows $R/$c.csv; done
