# Run 1 (4 GPUs, a process per GPU): the staged large reductions (plain buffers of several
# processes cannot go zero copy) under other settings, against the defaults, two alternations:
# staging of 256 MiB instead of 128 (rounds of 128 MiB), 132 blocks for reductions in rounds
# instead of 128, at least 2 or 8 rounds instead of 4. Then the four collectives at 64 MiB-1 GiB
# with the default and with 256 MiB of staging.
RUN=r1 . scripts/device-pre.sh
G="--mp --ranks 4 --graph 10 --iters 10 --warmup 3 --factor 4"
one() { # TAG ENV ARGS...
  local tag=$1 set=$2; shift 2
  env $set timeout 120 $B/coll_bench $G "$@" --csv $R/$tag.csv > $R/$tag.txt 2>&1; echo "$tag rc=$?"; pack
}
for i in 1 2; do
  one Ad_$i X=1 --colls allreduce,reducescatter --min 64M --max 1G
  one Bsb_$i X=1 --sym-bytes 256M --colls allreduce,reducescatter --min 64M --max 1G
  one Brb_$i KILN_SYM_REDUCE_BLOCKS=132 --colls allreduce,reducescatter --min 64M --max 1G
  one Bmr2_$i KILN_SYM_MIN_ROUNDS=2 --colls allreduce,reducescatter --min 64M --max 1G
  one Bmr8_$i KILN_SYM_MIN_ROUNDS=8 --colls allreduce,reducescatter --min 64M --max 1G
done
one Cd X=1 --min 64M --max 1G
one Csb X=1 --sym-bytes 256M --min 64M --max 1G
cat $OUT/gpus.txt
for t in Ad_1 Ad_2 Bsb_1 Bsb_2 Brb_1 Brb_2 Bmr2_1 Bmr2_2 Bmr8_1 Bmr8_2 Cd Csb; do echo "== $t"; rows $R/$t.csv; done
