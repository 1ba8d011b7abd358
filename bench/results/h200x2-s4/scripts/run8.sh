#!/bin/bash
# session 4, device call 8: classic_plans_2gpus failed once (direct allreduce LL128, int8 prod,
# count 1): the same seed again, then three other seeds
export NCCL_NVLS_ENABLE=0 KILN_TEST_REQUIRE_GPUS=1
NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
export LD_LIBRARY_PATH=$NL:$PWD/.carry/lib
for s in 1795678559 11 12 13; do
  KILN_TEST_SEED=$s timeout 100 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/classic_plans_2gpus' > $L/seed_$s.txt 2>&1; echo "rc $?" >> $L/seed_$s.txt
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
for s in 1795678559 11 12 13; do echo "== seed $s"; tar xzf logs.tgz -O logs/seed_$s.txt | grep -E 'FAIL|PASS|rc |want' | head -5; done
