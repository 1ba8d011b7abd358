#!/bin/bash
# session 8, device call 11: sym_direct draws each call's data once (it prepared every call twice
# to assert the form first; the assertion now follows the check): sym_direct, sym_direct_choice.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
nvidia-smi -L > $L/gpus.txt
timeout 200 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_direct|sym_direct_choice)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
tar xzf logs.tgz -O logs/tests.txt | grep -E 'FAIL|PASS|rc |checked|Synthesis' | head -8
