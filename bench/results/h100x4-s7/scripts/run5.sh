#!/bin/bash
# session 7, device call 5 (4 GPUs): alltoall and allreduce at 512 MiB and 1 GiB (the sizes still
# at 0.98-0.99x in run 4): blocks and staging memory, NCCL in every call.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
run() { name=$1; shift; env "$@" timeout 45 $B --ranks 4 --iters 5 --warmup 2 --graph 3 --colls alltoall,allreduce --min 512M --max 1G --factor 2 $EXTRA --csv $L/$name.csv > $L/$name.txt 2>&1; }
EXTRA= run base X=1
EXTRA= run b128 KILN_SYM_BLOCKS=128
EXTRA= run b96 KILN_SYM_BLOCKS=96 KILN_SYM_REDUCE_BLOCKS=96
EXTRA="--sym-bytes 128M" run s128 X=1
EXTRA="--sym-bytes 128M" run s128b128 KILN_SYM_BLOCKS=128
EXTRA= run base2 X=1
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
for x in base b128 b96 s128 s128b128 base2; do echo "== $x (coll MiB nccl sym speedup)"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 {printf "%s %s %s %s %s e%s; ",substr($1,1,5),$7/1048576,$10,$22,$26,$25}'; echo; done
